package probe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtcp"
)

// TestPlayReportsAConnectionLost plays from an RTSP server that sends a
// few packets and then closes the connection, as a node does when it ends
// the session, or as a pulled cable fails it: the result says the play
// stopped early, and why. Before, it read as a play that ran its course
// (vodctl play --duration 0 over UDP printed "4.83 s of media in 4.85 s"
// on a 20 s title when the client's link went down, nothing more), and
// the reason is said in words.
func TestPlayReportsAConnectionLost(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go serveThenEnd(lis, "")
	res, err := Play(t.Context(), "rtsp://"+lis.Addr().String()+"/vod/x", Options{Duration: time.Minute, Idle: 20 * time.Second})
	if err != nil {
		t.Fatalf("play: %v", err)
	}
	if res.Packets == 0 {
		t.Fatal("no packet counted")
	}
	if !strings.Contains(res.String(), "; stopped early: ") {
		t.Fatalf("a play the server cut after %d packets reads as a whole one: %s", res.Packets, res)
	}
	// A node killed mid-play read "stopped early: EOF".
	if want := "; stopped early: the server closed the connection"; !strings.HasSuffix(res.String(), want) {
		t.Errorf("report %q, want it to end %q", res, want)
	}
}

// A session the server ends with an RTCP BYE naming another reason than
// the end of the title (an operator's `vodctl sessions end --reason`)
// is a play stopped early, with that reason; a BYE at the end of the
// title is a play that ran its course. Before, an operator's cut read as
// a whole play (a 20 s title: "2.95 s of media in 2.99 s", nothing
// more). Either way the play ends once the packets stop after the BYE,
// not Idle (a minute here) later.
func TestPlayReportsTheServersBye(t *testing.T) {
	for bye, stopped := range map[string]bool{"test cut": true, endOfTitleBye: false} {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer lis.Close()
		go serveThenEnd(lis, bye)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // bounds a play that ignored the BYE
		res, err := Play(ctx, "rtsp://"+lis.Addr().String()+"/vod/x", Options{Idle: time.Minute})
		cancel()
		if err != nil {
			t.Fatalf("BYE %q: play: %v", bye, err)
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("BYE %q: the play went on after the BYE until the test's deadline: %s", bye, res)
		}
		if got := strings.Contains(res.String(), "; stopped early: "); got != stopped {
			t.Errorf("BYE %q: stopped early %v, want %v: %s", bye, got, stopped, res)
		}
		if stopped && !strings.Contains(res.Stopped, bye) {
			t.Errorf("BYE %q: Stopped %q does not give the reason", bye, res.Stopped)
		}
	}
}

// A stream that stops without the server's RTCP BYE at the end of the
// title (a node whose fill waits for an origin channel: its viewer plays
// the bytes it has and freezes) is a play stopped early, after Idle.
// Before, `vodctl play` reported it as a play that ran its course
// ("2.59 s of media in 2.60 s (1.00x real time)" of a 10 s play).
func TestPlayReportsAStreamThatFroze(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go serveThenFreeze(lis)
	res, err := Play(t.Context(), "rtsp://"+lis.Addr().String()+"/vod/x", Options{Duration: 10 * time.Second, Idle: 300 * time.Millisecond})
	if err != nil {
		t.Fatalf("play: %v", err)
	}
	if res.Packets == 0 || !strings.Contains(res.Stopped, "no packet for 300ms, and no end of title") {
		t.Fatalf("a stream that froze after %d packets: Stopped %q: %s", res.Packets, res.Stopped, res)
	}
}

// serveThenEnd answers one client's OPTIONS, DESCRIBE (one MP2T track),
// SETUP (interleaved) and PLAY, sends ten RTP packets of null TS packets
// and ends the connection; with bye, sends an RTCP BYE with that reason
// instead and answers the client until it closes.
func serveThenEnd(lis net.Listener, bye string) {
	serve(lis, bye, false)
}

// serveThenFreeze is serveThenEnd that, after its packets, sends nothing
// more and keeps the connection open: a stream that froze.
func serveThenFreeze(lis net.Listener) {
	serve(lis, "", true)
}

// serve is serveThenEnd, or with freeze serveThenFreeze.
func serve(lis net.Listener, bye string, freeze bool) {
	c, err := lis.Accept()
	if err != nil {
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(15 * time.Second))
	r := textproto.NewReader(bufio.NewReader(c))
	for {
		line, err := r.ReadLine()
		if err != nil {
			return
		}
		hdr, err := r.ReadMIMEHeader()
		if err != nil {
			return
		}
		method := strings.Fields(line)[0]
		head := fmt.Sprintf("RTSP/1.0 200 OK\r\nCSeq: %s\r\n", hdr.Get("CSeq"))
		switch method {
		case "OPTIONS":
			fmt.Fprintf(c, "%sPublic: DESCRIBE, SETUP, PLAY, TEARDOWN\r\n\r\n", head)
		case "DESCRIBE":
			sdp := "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=x\r\nc=IN IP4 0.0.0.0\r\nt=0 0\r\nm=video 0 RTP/AVP 33\r\na=rtpmap:33 MP2T/90000\r\na=control:trackID=0\r\n"
			fmt.Fprintf(c, "%sContent-Base: rtsp://%s/vod/x/\r\nContent-Type: application/sdp\r\nContent-Length: %d\r\n\r\n%s", head, lis.Addr(), len(sdp), sdp)
		case "SETUP":
			fmt.Fprintf(c, "%sTransport: RTP/AVP/TCP;unicast;interleaved=0-1\r\nSession: 1;timeout=60\r\n\r\n", head)
		case "PLAY":
			fmt.Fprintf(c, "%sSession: 1\r\n\r\n", head)
			for i := range 10 {
				const l = 12 + 7*188 // RTP header and payload
				pkt := make([]byte, 4+l)
				pkt[0], pkt[1], pkt[2], pkt[3] = '$', 0, l>>8, l&0xff
				pkt[4], pkt[5] = 0x80, 33
				pkt[6], pkt[7] = 0, byte(i)
				for k := range 7 {
					ts := pkt[16+k*188:]
					ts[0], ts[1], ts[2], ts[3] = 0x47, 0x1f, 0xff, 0x10 // null packet
				}
				c.Write(pkt)
			}
			if bye != "" || freeze {
				b, _ := rtcp.Marshal([]rtcp.Packet{&rtcp.ReceiverReport{SSRC: 1}, &rtcp.Goodbye{Sources: []uint32{1}, Reason: bye}})
				if !freeze {
					c.Write(append([]byte{'$', 1, byte(len(b) >> 8), byte(len(b))}, b...))
				}
				continue // the client's TEARDOWN, answered
			}
			// The end of the stream, then what the client still sends
			// read away until it closes (no reset to drop the packets).
			c.(*net.TCPConn).CloseWrite()
			io.Copy(io.Discard, c)
			return
		default:
			fmt.Fprintf(c, "%s\r\n", head)
		}
	}
}
