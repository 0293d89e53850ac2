package deliver

import (
	"context"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/rtcp"

	"vodcluster/cdp/tsindex"
)

// atESEnd is a complete title whose hook runs once, on the ES stream's
// own goroutine (ESStream.run), at the first State it asks once the title
// was read to its last byte: the play has ended there, every RTP packet
// written, its end-of-title BYE not yet made.
type atESEnd struct {
	*memSource
	readEnd atomic.Bool
	once    sync.Once
	hook    func()
}

func (s *atESEnd) ReadAt(p []byte, off int64) (int, error) {
	n, err := s.memSource.ReadAt(p, off)
	if off+int64(n) >= int64(len(s.data)) {
		s.readEnd.Store(true)
	}
	return n, err
}

func (s *atESEnd) State() (*tsindex.Index, bool, error) {
	if s.readEnd.Load() && calledFrom("(*ESStream).run") {
		s.once.Do(s.hook)
	}
	return s.memSource.State()
}

// calledFrom reports whether the caller of the function calling it is
// the function named with suffix fn.
func calledFrom(fn string) bool {
	pcs := make([]uintptr, 1)
	if runtime.Callers(3, pcs) == 0 {
		return false
	}
	f, _ := runtime.CallersFrames(pcs).Next()
	return strings.HasSuffix(f.Function, fn)
}

// TestESEndOfTitleByeNotAfterNewPlay: over TCP, the end-of-title BYEs of
// an ES stream whose connection's writer is busy (a response being
// written) as its play ends are not sent once a new PLAY has begun: a
// PLAY with a Range (Seek(0)), whose response the client gets before the
// play's Resume, must not be followed by the BYEs of the play before,
// which would end the client's new play (RFC 3550 §6.6); they were
// written, waiting for the writer, after the stream's lock was released,
// whatever came meanwhile. The new play ends with its own BYEs, after its
// media. Nor are they sent after Close (TEARDOWN), and their timer does
// not outlive it.
func TestESEndOfTitleByeNotAfterNewPlay(t *testing.T) {
	clip := loadClip(t)
	tr, err := ProbeES(context.Background(), newMemSource(clip))
	if err != nil {
		t.Fatal(err)
	}
	title := prefix(t, clip, 1)
	for _, teardown := range []bool{false, true} {
		name := map[bool]string{false: "replay", true: "teardown"}[teardown]
		t.Run(name, func(t *testing.T) {
			e := startEngine(t, false)
			srv, cli := tcpPair(t)
			cw := NewConnWriter(srv, 0, 0)
			client := readByeFrames(cli)
			held := make(chan struct{})
			src := &atESEnd{memSource: newMemSource(title), hook: func() {
				cw.mu.Lock() // a response being written
				close(held)
			}}
			ends := make(chan EndReason, 4)
			st, err := e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPTCP, Conn: cw,
				Channel: [2]int{0, 2}, SSRC: [2]uint32{1, 2}, OnEnd: func(r EndReason, _ error) { ends <- r }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Seek(0); err != nil {
				t.Fatal(err)
			}
			st.Resume()
			select {
			case <-held:
			case <-time.After(10 * time.Second):
				t.Fatal("the play did not reach the end of the title")
			}
			// The play ends at the end of the title; its BYEs wait for
			// the writer. The client's request comes: as the node
			// handles it, its stream's steps run before the response is
			// written.
			for end := time.Now().Add(5 * time.Second); !st.AtEnd(); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(end) {
					cw.mu.Unlock()
					t.Fatal("the stream does not wait at the end of its title")
				}
			}
			if teardown {
				st.Close()
			} else if _, err := st.Seek(0); err != nil { // PLAY Range: npt=0-
				cw.mu.Unlock()
				t.Fatal(err)
			}
			media := client.media.Load()
			cw.mu.Unlock() // the response written
			// Before the play's Resume (the node's after-response step),
			// the writer is free for several retries of the BYEs.
			select {
			case b := <-client.byes:
				t.Errorf("BYE %q after the response to a new request", b.reason)
			case <-time.After(10 * idleReportRetry):
			}
			st.mu.Lock()
			pending := st.bye.pending()
			st.mu.Unlock()
			if pending {
				t.Error("the BYEs' timer still set")
			}
			select {
			case r := <-ends:
				if r != EndOfTitle {
					t.Fatalf("OnEnd(%s), want %s", r, EndOfTitle)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("OnEnd not called at the end of the title")
			}
			if !teardown {
				st.Resume()
				select {
				case r := <-ends:
					if r != EndOfTitle {
						t.Fatalf("OnEnd(%s) of the second play, want %s", r, EndOfTitle)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the second play did not end")
				}
				for i := range 2 {
					select {
					case b := <-client.byes:
						if b.reason != "end of title" || b.media <= media {
							t.Errorf("BYE %q after %d media bytes, want %q after more than the first play's %d", b.reason, b.media, "end of title", media)
						}
					case <-time.After(5 * time.Second):
						t.Fatalf("%d of the 2 BYEs after the second play", i)
					}
				}
			}
			cli.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			<-client.done
			select {
			case b := <-client.byes:
				t.Errorf("a further BYE %q", b.reason)
			default:
			}
			if got, sent := client.bytes.Load(), st.BytesSent(); got != sent {
				t.Errorf("the client got %d bytes, BytesSent %d", got, sent)
			}
			st.Close()
			srv.Close()
			cli.Close()
		})
	}
}

// TestESEndOfTitleByeUDPNotAfterNewPlay: over UDP an ES stream's
// end-of-title BYE, sent ByeDelay after the last RTP packets, is not sent
// once a PLAY with a Range has sought the stream back meanwhile (its
// Seek, before the PLAY's response): only after the response does the
// node Resume the play, and a BYE sent between the two would end the
// client's new play. The new play's own end sends its BYE.
func TestESEndOfTitleByeUDPNotAfterNewPlay(t *testing.T) {
	clip := loadClip(t)
	tr, err := ProbeES(context.Background(), newMemSource(clip))
	if err != nil {
		t.Fatal(err)
	}
	e := startEngine(t, true)
	rtpC, rtcpC := listenUDP(t), listenUDP(t)
	byes := make(chan string, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			n, _, err := rtcpC.ReadFrom(buf)
			if err != nil {
				return
			}
			ps, err := rtcp.Unmarshal(buf[:n])
			if err != nil {
				continue
			}
			for _, q := range ps {
				if g, ok := q.(*rtcp.Goodbye); ok {
					byes <- g.Reason
				}
			}
		}
	}()
	type end struct {
		reason EndReason
		err    error // of the new PLAY's Seek, made in OnEnd
	}
	ends := make(chan end, 4)
	var st *ESStream
	var plays atomic.Int32
	st, err = e.NewESStream(ESConfig{Source: newMemSource(prefix(t, clip, 0.5)), Tracks: tr, Mode: RTPUDP,
		Dest: [2]*net.UDPAddr{rtpC.LocalAddr().(*net.UDPAddr)}, RTCP: [2]*net.UDPAddr{rtcpC.LocalAddr().(*net.UDPAddr)},
		SSRC: [2]uint32{1, 2},
		OnEnd: func(r EndReason, _ error) {
			var err error
			if plays.Add(1) == 1 {
				// A PLAY npt=0- as the play ends, well within ByeDelay,
				// before its response.
				_, err = st.Seek(0)
			}
			ends <- end{r, err}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Seek(0); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	select {
	case d := <-ends:
		if d.reason != EndOfTitle || d.err != nil {
			t.Fatalf("OnEnd(%s), the new Seek's error %v; want %s, none", d.reason, d.err, EndOfTitle)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the play did not end")
	}
	select {
	case r := <-byes:
		t.Errorf("BYE %q of the play before, after the new PLAY's seek", r)
	case <-time.After(e.ByeDelay + 10*idleReportRetry):
	}
	st.Resume() // the response written
	select {
	case d := <-ends:
		if d.reason != EndOfTitle {
			t.Fatalf("OnEnd(%s) of the second play, want %s", d.reason, EndOfTitle)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second play did not end")
	}
	select {
	case r := <-byes:
		if r != "end of title" {
			t.Errorf("BYE %q, want %q", r, "end of title")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no BYE after the second play")
	}
	rtcpC.SetReadDeadline(time.Now())
	<-done
}
