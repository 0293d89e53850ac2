package deliver

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

// TestFailedFillRefilledPlaysOn: a stream at the end of the bytes of a
// failed fill asks OnFillFailed (without its lock held: the callback
// reads the stream's position) and, its source filled again, plays on
// from where it stands once the new fill brings bytes: every byte of the
// title in order, its RTP sequence numbers following one another, and
// the BYE of the end of the title. It ended there with its BYE "fill
// failed".
func TestFailedFillRefilledPlaysOn(t *testing.T) {
	e := startEngine(t, false)
	data := prefix(t, loadClip(t), 2) // played in real time
	src := newFillingSource(data)
	srv, cli := tcpPair(t)
	done := make(chan ended, 2)
	asked := make(chan float64, 2)
	var st *Stream
	st, _ = e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0),
		OnEnd: func(r EndReason, err error) { done <- ended{r, err} },
		OnFillFailed: func() bool {
			asked <- st.Position() // s.mu not held
			src.refilled()
			return true
		}})
	st.Play(0)
	src.reveal(188 * 100)
	src.fail(errors.New("origin gone"))
	select {
	case <-asked:
	case d := <-done:
		t.Fatalf("the stream ended (%+v) without asking for a refill", d)
	case <-time.After(5 * time.Second):
		t.Fatal("OnFillFailed not asked")
	}
	src.awaitWaitPast(t, 188*100-1) // waits for the new fill
	src.reveal(len(data))
	media, bye, seqs := readUntilBye(t, cli)
	if bye != "end of title" {
		t.Fatalf("BYE %q, want the end of the title's", bye)
	}
	if len(media) != len(data) || string(media) != string(data) {
		t.Fatalf("%d bytes of media, want the title's %d", len(media), len(data))
	}
	checkSeqsFollow(t, seqs)
	if d := <-done; d.reason != EndOfTitle {
		t.Fatalf("end %+v, want the title's", d)
	}
	if len(asked) != 0 {
		t.Fatal("OnFillFailed asked twice")
	}
}

// TestFailedFillRefillRefusedEnds: OnFillFailed refusing, the stream
// ends at the end of the bytes the failed fill left, with its BYE "fill
// failed" and EndError, as without it; it is asked once.
func TestFailedFillRefillRefusedEnds(t *testing.T) {
	e := startEngine(t, false)
	src := newFillingSource(loadClip(t))
	srv, cli := tcpPair(t)
	done := make(chan ended, 2)
	asked := make(chan struct{}, 2)
	st, _ := e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0),
		OnEnd:        func(r EndReason, err error) { done <- ended{r, err} },
		OnFillFailed: func() bool { asked <- struct{}{}; return false }})
	st.Play(0)
	src.reveal(188 * 100)
	src.fail(errors.New("origin gone"))
	media, bye, _ := readUntilBye(t, cli)
	if bye != "fill failed" || len(media) != 188*100 {
		t.Fatalf("BYE %q after %d bytes of media, want \"fill failed\" after the %d the fill left", bye, len(media), 188*100)
	}
	awaitEndError(t, done)
	if len(asked) != 1 {
		t.Fatalf("OnFillFailed asked %d times, want once", len(asked))
	}
}

// readUntilBye reads the interleaved frames of a stream over TCP (RTP on
// channel 0, RTCP on 1) until an RTCP BYE, and returns the media, the
// BYE's reason and the RTP sequence numbers.
func readUntilBye(t *testing.T, cli net.Conn) (media []byte, bye string, seqs []uint16) {
	t.Helper()
	cli.SetReadDeadline(time.Now().Add(20 * time.Second))
	hdr, buf := make([]byte, 4), make([]byte, 65536)
	for {
		if _, err := io.ReadFull(cli, hdr); err != nil {
			t.Fatalf("no RTCP BYE after %d bytes of media: %v", len(media), err)
		}
		l := int(hdr[2])<<8 | int(hdr[3])
		if _, err := io.ReadFull(cli, buf[:l]); err != nil {
			t.Fatal(err)
		}
		if hdr[1] == 0 {
			var p rtp.Packet
			if err := p.Unmarshal(buf[:l]); err != nil {
				t.Fatalf("RTP frame: %v", err)
			}
			media = append(media, p.Payload...)
			seqs = append(seqs, p.SequenceNumber)
			continue
		}
		ps, err := rtcp.Unmarshal(buf[:l])
		if err != nil {
			t.Fatalf("RTCP frame: %v", err)
		}
		for _, p := range ps {
			if b, ok := p.(*rtcp.Goodbye); ok {
				return media, b.Reason, seqs
			}
		}
	}
}

// checkSeqsFollow fails t unless the RTP sequence numbers seqs follow one
// another: one stream, no packet lost nor sent twice.
func checkSeqsFollow(t *testing.T, seqs []uint16) {
	t.Helper()
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("RTP packet %d: sequence number %d after %d", i, seqs[i], seqs[i-1])
		}
	}
}

// awaitAsked waits, at most 5 s, for OnFillFailed to be asked (a value on
// asked) and returns the value it sent.
func awaitAsked[T any](t *testing.T, asked <-chan T) (v T) {
	t.Helper()
	select {
	case v = <-asked:
	case <-time.After(5 * time.Second):
		t.Fatal("OnFillFailed not asked")
	}
	return v
}

// awaitEndError waits, at most 5 s, for a stream's OnEnd (an ended on
// ends) and fails t unless it ended on an error (EndError with its err).
func awaitEndError(t *testing.T, ends <-chan ended) {
	t.Helper()
	select {
	case d := <-ends:
		if d.reason != EndError || d.err == nil {
			t.Fatalf("end %+v", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnEnd not called")
	}
}

// TestTrickFailedFillRefilledPlaysOn: a trick play (Scale 8) whose
// title's fill fails asks OnFillFailed and, its source filled again,
// plays on from where it stands once the new fill brings bytes: pictures
// forward to the end of the title, its RTP sequence numbers following
// one another, and the BYE of the end of the title. It ended at once
// with its BYE "fill failed".
func TestTrickFailedFillRefilledPlaysOn(t *testing.T) {
	e := startEngine(t, false)
	data := loadClip(t)
	src := newFillingSource(data)
	srv, cli := tcpPair(t)
	asked := make(chan struct{}, 2)
	var st *Stream
	st, _ = e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0),
		OnFillFailed: func() bool {
			st.Position() // s.mu not held
			asked <- struct{}{}
			src.refilled()
			return true
		}})
	src.reveal(len(data) / 2)
	st.SetScale(8)
	if _, err := st.Play(0); err != nil {
		t.Fatal(err)
	}
	src.fail(errors.New("origin gone"))
	awaitAsked(t, asked)
	src.reveal(len(data))
	media, bye, seqs := readUntilBye(t, cli)
	if bye != "end of title" {
		t.Fatalf("BYE %q after %d bytes of media, want the end of the title's", bye, len(media))
	}
	checkSeqsFollow(t, seqs)
	if p := st.Position(); p < 15 {
		t.Fatalf("position %.1f s at the end, want the title's end", p)
	}
	if len(asked) != 0 {
		t.Fatal("OnFillFailed asked twice")
	}
}
