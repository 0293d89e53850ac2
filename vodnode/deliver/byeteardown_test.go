package deliver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/pion/rtcp"

	"vodcluster/cdp/tsindex"
)

// failingAtEnd is a title whose fill fails (failFill); hook runs once, on
// the goroutine asking, at the first State that the function named from
// (the stream's own code ending its play) asks once the failure shows.
type failingAtEnd struct {
	*memSource
	from string
	once sync.Once
	hook func()
}

func (s *failingAtEnd) State() (*tsindex.Index, bool, error) {
	idx, complete, err := s.memSource.State()
	if err != nil {
		if pc, _, _, ok := runtime.Caller(1); ok && runtime.FuncForPC(pc).Name() == s.from {
			s.once.Do(s.hook)
		}
	}
	return idx, complete, err
}

// failFill fails src's fill and wakes what waits for more of it.
func failFill(src *memSource) {
	src.mu.Lock()
	src.err = errors.New("origin gone")
	due := src.waiters
	src.waiters, src.afters = nil, nil
	src.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// wireEvent is what an RTSP client reads from its connection: an
// interleaved frame (channel, payload) or the response answer.
type wireEvent struct {
	answer  bool
	channel byte
	bye     bool // an RTCP frame carrying a BYE
	size    int  // bytes of a frame, its header included
}

// readWire reads c as an RTSP client over TCP does, interleaved frames and
// the response answer (its bytes exactly), until c fails (its deadline);
// the channel gets what was read, in order, and is closed then.
func readWire(c net.Conn, answer []byte) <-chan wireEvent {
	out := make(chan wireEvent, 1<<16)
	go func() {
		defer close(out)
		br := bufio.NewReader(c)
		buf := make([]byte, 65536)
		for {
			p, err := br.Peek(1)
			if err != nil {
				return
			}
			if p[0] != '$' {
				got := make([]byte, len(answer))
				if _, err := io.ReadFull(br, got); err != nil {
					return
				}
				if !bytes.Equal(got, answer) {
					out <- wireEvent{channel: 255} // neither a frame nor the answer
					return
				}
				out <- wireEvent{answer: true}
				continue
			}
			ch, b, err := nextFrame(br, buf)
			if err != nil {
				return
			}
			out <- wireEvent{channel: ch, bye: ch%2 == 1 && hasRTCPBye(b), size: 4 + len(b)}
		}
	}()
	return out
}

// answerHeld writes b to cw's connection as cw.Write does, the caller
// holding cw.mu: what is queued first, then b (a response written while
// the writer is taken).
func answerHeld(t *testing.T, cw *ConnWriter, b []byte) {
	t.Helper()
	if _, err := cw.c.Write(append(cw.pending, b...)); err != nil {
		t.Fatal(err)
	}
	cw.pending = cw.pending[:0]
}

// hasRTCPBye reports whether the compound RTCP packet b carries a BYE.
func hasRTCPBye(b []byte) bool {
	ps, err := rtcp.Unmarshal(b)
	if err != nil {
		return false
	}
	for _, p := range ps {
		if _, ok := p.(*rtcp.Goodbye); ok {
			return true
		}
	}
	return false
}

// teardownAnswer stands for the response to a TEARDOWN.
var teardownAnswer = []byte("RTSP/1.0 200 OK\r\nCSeq: 9\r\nSession: 1\r\n\r\n")

// TestFailedFillByeNotAfterTeardown: over TCP, the RTCP BYE "fill failed"
// of an MP2T or elementary-stream play whose title's fill failed, which
// waits for the connection's writer (busy with a response), is not
// written after the answer to a TEARDOWN that closed the stream
// meanwhile: the BYE was checked and then written out of the stream's
// lock, on a goroutine of its own, and landed on the wire after the
// answer, when the client is done with the session. OnEnd still hears
// the failure; the BYE not sent counts nowhere.
func TestFailedFillByeNotAfterTeardown(t *testing.T) {
	clip := loadClip(t)
	tr, err := ProbeES(context.Background(), newMemSource(clip))
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"mp2t", "es"} {
		t.Run(kind, func(t *testing.T) {
			e := startEngine(t, false)
			srv, cli := tcpPair(t)
			cw := NewConnWriter(srv, 0, 0)
			wire := readWire(cli, teardownAnswer)
			src := newFillingSource(clip)
			src.reveal(PayloadSize * 150) // whole payloads: the MP2T play sends them all, then waits
			held := make(chan struct{})
			fa := &failingAtEnd{memSource: src, hook: func() {
				cw.mu.Lock() // a response being written
				close(held)
			}}
			ends := make(chan EndReason, 2)
			onEnd := func(r EndReason, _ error) { ends <- r }
			var st interface {
				Close()
				BytesSent() int64
				WaitingForFill() bool
			}
			var byeDue func() bool
			switch kind {
			case "mp2t":
				fa.from = "vodcluster/vodnode/deliver.(*Stream).step"
				ms, err := e.NewStream(StreamConfig{Source: fa, Mode: RTPTCP, Conn: cw, SSRC: 1, OnEnd: onEnd})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := ms.Play(0); err != nil {
					t.Fatal(err)
				}
				st = ms
				byeDue = func() bool {
					ms.mu.Lock()
					retry := ms.bye.pending()
					ms.mu.Unlock()
					return retry || goroutineIn("deliver.(*Stream).", "deliver.(*ConnWriter).Write(")
				}
			case "es":
				fa.from = "vodcluster/vodnode/deliver.(*ESStream).run"
				es, err := e.NewESStream(ESConfig{Source: fa, Tracks: tr, Mode: RTPTCP, Conn: cw,
					Channel: [2]int{0, 2}, SSRC: [2]uint32{1, 2}, OnEnd: onEnd})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := es.Seek(0); err != nil {
					t.Fatal(err)
				}
				es.Resume()
				st = es
				byeDue = func() bool {
					es.mu.Lock()
					retry := es.bye.pending()
					es.mu.Unlock()
					return retry || goroutineIn("deliver.(*ESStream).run(", "deliver.(*ConnWriter).Write(")
				}
			}
			defer st.Close()
			waitUntil(t, 10*time.Second, "the play to wait for the fill", st.WaitingForFill)
			failFill(src)
			select {
			case <-held:
			case <-time.After(10 * time.Second):
				t.Fatal("the play did not end at the failure")
			}
			// The BYE waits for the writer (its retry set, or a goroutine
			// waiting in the writer's Write). A TEARDOWN comes: handled,
			// the stream closed, then its answer written.
			for end := time.Now().Add(5 * time.Second); !byeDue(); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(end) {
					cw.mu.Unlock()
					t.Fatal("no BYE waiting for the writer")
				}
			}
			st.Close()
			answerHeld(t, cw, teardownAnswer)
			cw.mu.Unlock()
			select {
			case r := <-ends:
				if r != EndError {
					t.Errorf("OnEnd(%s), want %s", r, EndError)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("OnEnd not called")
			}
			var answered bool
			var got int64 // bytes of the frames before the answer
			timeout := time.After(10 * time.Second)
			for !answered {
				select {
				case ev, ok := <-wire:
					if !ok {
						t.Fatal("the connection ended before the answer")
					}
					if ev.channel == 255 {
						t.Fatal("neither a frame nor the answer on the wire")
					}
					if ev.bye {
						t.Errorf("a BYE before the TEARDOWN's answer, sent while the writer was busy")
					}
					answered = ev.answer
					got += int64(ev.size)
				case <-timeout:
					t.Fatal("no answer")
				}
			}
			// Nothing follows the answer: what is left is read at once.
			cli.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			for ev := range wire {
				switch {
				case ev.bye:
					t.Errorf("an RTCP BYE on channel %d after the TEARDOWN's answer", ev.channel)
				default:
					t.Errorf("%+v after the TEARDOWN's answer", ev)
				}
			}
			if sent, all := st.BytesSent(), e.BytesSent(); got != sent || got != all {
				t.Errorf("the client got %d bytes, BytesSent %d, the engine's %d", got, sent, all)
			}
		})
	}
}
