package deliver

import (
	"errors"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

// TestESFailedFillRefilledPlaysOn: an elementary-stream play whose reader
// reaches the end of the bytes of a failed fill asks OnFillFailed
// (without the stream's lock held: the callback reads its position),
// waits meanwhile as for the fill (WaitingForFill) and, its source filled
// again, plays on from where it stands once the new fill brings bytes:
// each track sends the very RTP packets a play of the whole title
// sends (sequence numbers, timestamps and payloads, in order), and the
// BYEs of the end of the title. It ended there with its BYEs "fill
// failed".
func TestESFailedFillRefilledPlaysOn(t *testing.T) {
	e := startEngine(t, false)
	data := prefix(t, loadClip(t), 3) // played in real time
	ref, refCli := esTCPStream(t, e, newMemSource(data), nil)
	src := newFillingSource(data)
	asked := make(chan bool, 2) // whether the play waited for the fill meanwhile
	var st *ESStream
	st, cli := esTCPStreamConfig(t, e, src, func(c *ESConfig) {
		c.OnEnd = nil
		c.OnFillFailed = func() bool {
			st.Position() // s.mu not held
			asked <- st.WaitingForFill()
			src.refilled()
			return true
		}
	})
	cut := len(prefix(t, data, 1.5)) / TSPacketSize * TSPacketSize // half of it, its head's audio with it
	src.reveal(cut)
	seekResume(t, ref, 0)
	seekResume(t, st, 0)
	want := make(chan esReceived, 1)
	go func() { want <- readESUntilByes(t, refCli) }()
	src.awaitWaitPast(t, int64(cut)-1) // the reader at the cut
	src.fail(errors.New("origin gone"))
	if waiting := awaitAsked(t, asked); !waiting {
		t.Error("the play did not wait for the fill while OnFillFailed was asked")
	}
	src.awaitWaitPast(t, int64(cut)-1) // waits for the new fill
	src.reveal(len(data))
	got := readESUntilByes(t, cli)
	if got.byes != [2]string{"end of title", "end of title"} {
		t.Fatalf("BYEs %q, want the end of the title's", got.byes)
	}
	w := <-want
	for i := range 2 {
		if len(got.pkts[i]) != len(w.pkts[i]) {
			t.Fatalf("track %d: %d RTP packets, want the title's %d", i, len(got.pkts[i]), len(w.pkts[i]))
		}
		for k, p := range got.pkts[i] {
			q := w.pkts[i][k]
			if p.SequenceNumber != q.SequenceNumber || p.Timestamp != q.Timestamp || !slices.Equal(p.Payload, q.Payload) {
				t.Fatalf("track %d, RTP packet %d: sequence number %d, timestamp %d, %d bytes; a play of the whole title sends %d, %d, %d bytes",
					i, k, p.SequenceNumber, p.Timestamp, len(p.Payload), q.SequenceNumber, q.Timestamp, len(q.Payload))
			}
		}
	}
	if len(asked) != 0 {
		t.Fatal("OnFillFailed asked twice")
	}
}

// TestESFailedFillRefillRefusedEnds: OnFillFailed refusing, an
// elementary-stream play ends at the end of the bytes the failed fill
// left, with its BYEs "fill failed" and EndError, as without it; it is
// asked once.
func TestESFailedFillRefillRefusedEnds(t *testing.T) {
	e := startEngine(t, false)
	src := newFillingSource(loadClip(t))
	ends := make(chan ended, 2)
	asked := make(chan struct{}, 2)
	st, cli := esTCPStreamConfig(t, e, src, func(c *ESConfig) {
		c.OnEnd = func(r EndReason, err error) { ends <- ended{r, err} }
		c.OnFillFailed = func() bool {
			select {
			case asked <- struct{}{}:
			default: // asked more than twice: counted as twice
			}
			return false
		}
	})
	src.reveal(len(prefix(t, src.data, 1.5)))
	seekResume(t, st, 0)
	src.fail(errors.New("origin gone"))
	if got := readESUntilByes(t, cli); got.byes != [2]string{"fill failed", "fill failed"} {
		t.Fatalf("BYEs %q, want \"fill failed\"", got.byes)
	}
	awaitEndError(t, ends)
	if len(asked) != 1 {
		t.Fatalf("OnFillFailed asked %d times, want once", len(asked))
	}
}

// TestESSeekPastFailedFillRefilled: a seek past the bytes of a failed
// fill asks OnFillFailed and, the source filled again, plays from the
// keyframe at the seek's time once the new fill has indexed it, to the
// end of the title. It ended at once with its BYEs "fill failed".
func TestESSeekPastFailedFillRefilled(t *testing.T) {
	e := startEngine(t, false)
	data := prefix(t, loadClip(t), 3)
	src := newFillingSource(data)
	asked := make(chan struct{}, 2)
	st, cli := esTCPStreamConfig(t, e, src, func(c *ESConfig) {
		c.OnEnd = nil
		c.OnFillFailed = func() bool {
			asked <- struct{}{}
			src.refilled()
			return true
		}
	})
	src.reveal(len(prefix(t, data, 1)))
	seekResume(t, st, 2) // not indexed yet: waits for the fill
	src.fail(errors.New("origin gone"))
	awaitAsked(t, asked)
	src.reveal(len(data))
	got := readESUntilByes(t, cli)
	if got.byes != [2]string{"end of title", "end of title"} || len(got.pkts[0]) == 0 {
		t.Fatalf("BYEs %q after %d video packets, want the end of the title's after some", got.byes, len(got.pkts[0]))
	}
}

// esTCPStreamConfig is esTCPStream with its config changed by set first.
func esTCPStreamConfig(t *testing.T, e *Engine, src Source, set func(*ESConfig)) (*ESStream, net.Conn) {
	t.Helper()
	st, cli := esTCPStream(t, e, src, nil)
	cfg := st.cfg
	set(&cfg)
	st2, err := e.NewESStream(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st2, cli
}

// seekResume seeks st to at (seconds into the title) and resumes its play;
// a Seek's error fails t.
func seekResume(t *testing.T, st *ESStream, at float64) {
	t.Helper()
	if _, err := st.Seek(at); err != nil {
		t.Fatal(err)
	}
	st.Resume()
}

// esReceived is what readESUntilByes read: each track's RTP packets and
// its BYE's reason.
type esReceived struct {
	pkts [2][]rtp.Packet
	byes [2]string
}

// readESUntilByes reads cli's interleaved frames (video on channels 0-1,
// audio on 2-3) until both tracks' RTCP channels have carried a BYE,
// within 20 s.
func readESUntilByes(t *testing.T, cli net.Conn) (r esReceived) {
	cli.SetReadDeadline(time.Now().Add(20 * time.Second))
	hdr := make([]byte, 4)
	var got [2]bool
	for !got[0] || !got[1] {
		if _, err := io.ReadFull(cli, hdr); err != nil {
			t.Errorf("BYEs per track %v: %v", got, err)
			return r
		}
		buf := make([]byte, int(hdr[2])<<8|int(hdr[3]))
		if _, err := io.ReadFull(cli, buf); err != nil {
			t.Error(err)
			return r
		}
		i := int(hdr[1] / 2)
		if i > 1 {
			t.Errorf("frame on channel %d", hdr[1])
			return r
		}
		if hdr[1]%2 == 0 {
			var p rtp.Packet
			if err := p.Unmarshal(buf); err != nil {
				t.Errorf("RTP on channel %d: %v", hdr[1], err)
				return r
			}
			r.pkts[i] = append(r.pkts[i], p)
			continue
		}
		ps, _ := rtcp.Unmarshal(buf)
		for _, p := range ps {
			if b, ok := p.(*rtcp.Goodbye); ok {
				got[i], r.byes[i] = true, b.Reason
			}
		}
	}
	return r
}

// TestESCloseWhileRefillAsked: Close of an elementary-stream play whose
// reader waits for OnFillFailed's answer returns without waiting for it
// (the node answers under the session's lock, which a TEARDOWN closing
// the stream holds), and the answer, when it comes, plays nothing more.
func TestESCloseWhileRefillAsked(t *testing.T) {
	e := startEngine(t, false)
	src := newFillingSource(loadClip(t))
	asked, answer := make(chan struct{}, 1), make(chan bool)
	st, _ := esTCPStreamConfig(t, e, src, func(c *ESConfig) {
		c.OnFillFailed = func() bool { asked <- struct{}{}; return <-answer }
	})
	src.reveal(len(prefix(t, src.data, 1.5)))
	seekResume(t, st, 0)
	src.fail(errors.New("origin gone"))
	awaitAsked(t, asked)
	closed := make(chan struct{})
	go func() { st.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for OnFillFailed's answer")
	}
	answer <- true
	if st.WaitingForFill() {
		t.Fatal("a closed stream waits for the fill")
	}
}
