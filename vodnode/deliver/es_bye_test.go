package deliver

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/pion/rtcp"
)

// esTCPStream returns an ES stream of src over a loopback TCP connection
// (video on channels 0-1, audio on 2-3, SSRCs 1 and 2) and the client's
// end of it.
func esTCPStream(t *testing.T, e *Engine, src Source, onEnd func(EndReason, error)) (*ESStream, net.Conn) {
	t.Helper()
	tr, err := ProbeES(context.Background(), newMemSource(loadClip(t)))
	if err != nil {
		t.Fatal(err)
	}
	srv, cli := tcpPair(t)
	st, err := e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0),
		Channel: [2]int{0, 2}, SSRC: [2]uint32{1, 2}, OnEnd: onEnd})
	if err != nil {
		t.Fatal(err)
	}
	return st, cli
}

// readByes reads cli's interleaved frames until both tracks' RTCP
// channels (1 and 3) have carried a BYE, within 5 s, and returns each
// BYE's reason and the report before it; an RTP packet of a track after
// its BYE fails the test.
func readByes(t *testing.T, cli net.Conn) (reasons [2]string, reports [2]rtcp.Packet) {
	t.Helper()
	cli.SetReadDeadline(time.Now().Add(5 * time.Second))
	hdr, buf := make([]byte, 4), make([]byte, 65536)
	var got [2]bool
	for !got[0] || !got[1] {
		if _, err := io.ReadFull(cli, hdr); err != nil {
			t.Fatalf("BYEs per track %v: %v", got, err)
		}
		l := int(hdr[2])<<8 | int(hdr[3])
		if _, err := io.ReadFull(cli, buf[:l]); err != nil {
			t.Fatal(err)
		}
		i := int(hdr[1] / 2)
		if i > 1 {
			t.Fatalf("frame on channel %d", hdr[1])
		}
		if hdr[1]%2 == 0 {
			if got[i] {
				t.Fatalf("RTP on channel %d after its BYE", hdr[1])
			}
			continue
		}
		ps, err := rtcp.Unmarshal(buf[:l])
		if err != nil {
			t.Fatalf("RTCP on channel %d: %v", hdr[1], err)
		}
		for _, p := range ps {
			if b, ok := p.(*rtcp.Goodbye); ok {
				if len(b.Sources) != 1 || b.Sources[0] != uint32(i+1) {
					t.Errorf("BYE of track %d names %v", i, b.Sources)
				}
				got[i], reasons[i], reports[i] = true, b.Reason, ps[0]
			}
		}
	}
	return reasons, reports
}

// TestESAbortSendsByePerTrack: Abort of a playing ES stream sends, on
// each track's RTCP channel, a sender report and a BYE with the reason,
// after the track's last RTP packet; OnEnd is not called.
func TestESAbortSendsByePerTrack(t *testing.T) {
	e := startEngine(t, false)
	ends := make(chan EndReason, 1)
	st, cli := esTCPStream(t, e, newMemSource(loadClip(t)), func(r EndReason, _ error) { ends <- r })
	if _, err := st.Seek(0); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	// media of both tracks first
	cli.SetReadDeadline(time.Now().Add(5 * time.Second))
	hdr, buf := make([]byte, 4), make([]byte, 65536)
	for seen := [4]bool{}; !seen[0] || !seen[2]; {
		if _, err := io.ReadFull(cli, hdr); err != nil {
			t.Fatalf("media of both tracks: %v", err)
		}
		if _, err := io.ReadFull(cli, buf[:int(hdr[2])<<8|int(hdr[3])]); err != nil {
			t.Fatal(err)
		}
		seen[hdr[1]%4] = true
	}
	st.Abort("ended by the operator")
	reasons, reports := readByes(t, cli)
	for i := range 2 {
		if reasons[i] != "ended by the operator" {
			t.Errorf("track %d BYE reason %q", i, reasons[i])
		}
		if sr, ok := reports[i].(*rtcp.SenderReport); !ok || sr.PacketCount == 0 {
			t.Errorf("track %d BYE after %T %+v, want a sender report", i, reports[i], reports[i])
		}
	}
	if _, err := st.Seek(0); !errors.Is(err, ErrEnded) {
		t.Errorf("Seek after Abort: %v, want ErrEnded", err)
	}
	select {
	case r := <-ends:
		t.Errorf("OnEnd(%s) after Abort", r)
	default:
	}
}

// TestESAbortUnplayed: a stream never played sends each track's BYE after
// an empty receiver report.
func TestESAbortUnplayed(t *testing.T) {
	e := startEngine(t, false)
	st, cli := esTCPStream(t, e, newMemSource(loadClip(t)), nil)
	st.Abort("evicted")
	reasons, reports := readByes(t, cli)
	for i := range 2 {
		if _, ok := reports[i].(*rtcp.ReceiverReport); !ok || reasons[i] != "evicted" {
			t.Errorf("track %d: BYE %q after %T", i, reasons[i], reports[i])
		}
	}
}

// TestESFailedFillSendsBye: a fill error ends an ES stream once it has
// played the bytes the fill left (OnEnd hears EndError) and each track's
// client gets an RTCP BYE, reason "fill failed", as an MP2T stream's does.
func TestESFailedFillSendsBye(t *testing.T) {
	e := startEngine(t, false)
	data := loadClip(t)
	src := newFillingSource(data)
	src.reveal(188 * 200)
	ends := make(chan ended, 1)
	st, cli := esTCPStream(t, e, src, func(r EndReason, err error) { ends <- ended{r, err} })
	seekResume(t, st, 0)
	src.mu.Lock()
	src.err = errors.New("origin gone")
	src.mu.Unlock()
	src.reveal(188 * 300) // about 0.75 s of play
	reasons, _ := readByes(t, cli)
	if reasons != [2]string{"fill failed", "fill failed"} {
		t.Errorf("BYE reasons %q", reasons)
	}
	awaitEndError(t, ends)
}
