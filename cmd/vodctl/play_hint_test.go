package main

import (
	"bufio"
	"fmt"
	"net"
	"net/textproto"
	"strings"
	"testing"
	"time"
)

// serveOnce accepts connections on loopback until the test ends and
// answers each with answer(conn) (then closes it); it returns the address.
func serveOnce(t *testing.T, answer func(c net.Conn)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				answer(c)
			}()
		}
	}()
	return lis.Addr().String()
}

// vodctl play says what is wrong with the URL when its scheme or port is:
// rtsps:// to a plain RTSP server (it said only "tls: first record does
// not look like a TLS handshake"), and rtsp:// to a port that closes
// without an RTSP answer, as the front door's HTTP port does (it said
// only "DESCRIBE: EOF").
func TestPlayHintsSchemeAndPort(t *testing.T) {
	plainRTSP := serveOnce(t, func(c net.Conn) {
		c.Write([]byte("RTSP/1.0 400 Bad Request\r\nCSeq: 1\r\n\r\n"))
	})
	closes := serveOnce(t, func(c net.Conn) {
		bufio.NewReader(c).ReadString('\n') // the request line, then close
	})
	run := func(args ...string) error {
		cmd := newRoot()
		cmd.SetOut(&strings.Builder{})
		cmd.SetErr(&strings.Builder{})
		cmd.SetArgs(append([]string{"play", "--duration", "1s"}, args...))
		return cmd.Execute()
	}
	err := run("rtsps://demo:demo@" + plainRTSP + "/vod/sample-001")
	if err == nil || !strings.Contains(err.Error(), plainRTSP+" answers without TLS: give it an rtsp:// URL") {
		t.Errorf("rtsps:// to plain RTSP: %v", err)
	}
	err = run("rtsp://demo:demo@" + closes + "/vod/sample-001")
	if err == nil || !strings.Contains(err.Error(), closes+" closed the connection without an RTSP answer: is it the front door's RTSP port") {
		t.Errorf("rtsp:// to a port that closes: %v", err)
	}
	// A refusal is the server's answer: no hint.
	if err := run("rtsp://demo:demo@" + plainRTSP + "/vod/sample-001"); err == nil || strings.Contains(err.Error(), "without") {
		t.Errorf("rtsp:// to a server answering 400: %v", err)
	}
}

// rtspOnce answers one RTSP client's DESCRIBE (an MPEG-TS media), SETUP
// and PLAY, then closes the connection without sending media, as a node
// that dies or ends the session at once does; it returns the address.
func rtspOnce(t *testing.T) string {
	t.Helper()
	return serveOnce(t, func(c net.Conn) {
		r := textproto.NewReader(bufio.NewReader(c))
		for i := 0; i < 10; i++ {
			line, err := r.ReadLine()
			if err != nil {
				return
			}
			h, err := r.ReadMIMEHeader()
			f := strings.Fields(line)
			if err != nil || len(f) != 3 {
				return
			}
			cseq := h.Get("Cseq")
			switch f[0] {
			case "OPTIONS":
				fmt.Fprintf(c, "RTSP/1.0 200 OK\r\nCSeq: %s\r\nPublic: DESCRIBE, SETUP, PLAY, TEARDOWN\r\n\r\n", cseq)
			case "DESCRIBE":
				sdp := "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=t\r\nc=IN IP4 0.0.0.0\r\nt=0 0\r\nm=video 0 RTP/AVP 33\r\na=control:trackID=0\r\n"
				fmt.Fprintf(c, "RTSP/1.0 200 OK\r\nCSeq: %s\r\nContent-Type: application/sdp\r\nContent-Base: %s/\r\nContent-Length: %d\r\n\r\n%s",
					cseq, f[1], len(sdp), sdp)
			case "SETUP":
				fmt.Fprintf(c, "RTSP/1.0 200 OK\r\nCSeq: %s\r\nSession: 12345678\r\nTransport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n\r\n", cseq)
			case "PLAY":
				fmt.Fprintf(c, "RTSP/1.0 200 OK\r\nCSeq: %s\r\nSession: 12345678\r\n\r\n", cseq)
				return // and close
			default:
				return
			}
		}
	})
}

// A server that answered DESCRIBE, SETUP and PLAY and then closed the
// connection is no wrong port: the play's error names no port to give
// (it said the server "closed the connection without an RTSP answer: is
// it the front door's RTSP port", of a node that died mid-play).
func TestPlayHintNotAfterAnAnswer(t *testing.T) {
	addr := rtspOnce(t)
	cmd := newRoot()
	cmd.SetOut(&strings.Builder{})
	cmd.SetErr(&strings.Builder{})
	cmd.SetArgs([]string{"play", "--duration", "3s", "rtsp://demo:demo@" + addr + "/vod/sample-001"})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "session ended before any media") || strings.Contains(err.Error(), "RTSP port") {
		t.Fatalf("play of a session its server closed: %v", err)
	}
}
