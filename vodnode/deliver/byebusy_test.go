package deliver

import (
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/rtcp"

	"vodcluster/cdp/tsindex"
)

// byeClient reads an interleaved RTSP connection as a player does,
// counting the bytes it gets (frames with their 4-byte header) and the
// RTP payload bytes, and reporting each RTCP BYE with the RTP payload
// bytes that came before it.
type byeClient struct {
	bytes atomic.Int64
	media atomic.Int64
	byes  chan byeSeen
	done  chan struct{}
}

type byeSeen struct {
	reason string
	media  int64 // RTP payload bytes received before the BYE
}

func readByeFrames(c net.Conn) *byeClient {
	b := &byeClient{byes: make(chan byeSeen, 8), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		buf := make([]byte, 65536)
		for {
			ch, p, err := nextFrame(c, buf)
			if err != nil {
				return // the test closed the connection or set its deadline
			}
			b.bytes.Add(int64(4 + len(p)))
			if ch%2 == 0 {
				b.media.Add(int64(len(p) - rtpHeaderSize))
				continue
			}
			ps, err := rtcp.Unmarshal(p)
			if err != nil {
				continue
			}
			for _, q := range ps {
				if g, ok := q.(*rtcp.Goodbye); ok {
					select {
					case b.byes <- byeSeen{g.Reason, b.media.Load()}:
					default:
					}
				}
			}
		}
	}()
	return b
}

// heldAtEnd is a title whose bytes are all readable before it is
// complete; hook runs once, on the goroutine asking, at the first State
// that finds it complete (the pacer's step about to end the play).
type heldAtEnd struct {
	*memSource
	once sync.Once
	hook func()
}

func (s *heldAtEnd) State() (idx *tsindex.Index, complete bool, err error) {
	idx, complete, err = s.memSource.State()
	if complete && s.hook != nil {
		s.once.Do(s.hook)
	}
	return idx, complete, err
}

// TestEndOfTitleByeWaitsForBusyWriter: over TCP, an MP2T stream whose
// connection writer is busy (an RTSP response being written) when the
// stream reaches the end of its title still sends its end-of-title BYE,
// once the writer is free, after every byte of the title, and counts it
// in BytesSent (the BYE was dropped: the player waited in silence until
// its own timeout). A stream played again from the start while the BYE
// waited sends no stale BYE: its client's first BYE is the one after the
// second play. No goroutine is left behind.
func TestEndOfTitleByeWaitsForBusyWriter(t *testing.T) {
	clip := loadClip(t)
	title := prefix(t, clip, 1)
	title = title[:len(title)-len(title)%PayloadSize] // the play reaches the last byte before the title is complete
	for _, replay := range []bool{false, true} {
		name := map[bool]string{false: "busy", true: "busy-replayed"}[replay]
		t.Run(name, func(t *testing.T) {
			e := startEngine(t, false)
			before := runtime.NumGoroutine()
			srv, cli := tcpPair(t)
			cw := NewConnWriter(srv, 0, 0)
			client := readByeFrames(cli)
			ms := newFillingSource(title)
			ms.mu.Lock()
			ms.b.Write(title)
			ms.shown, ms.idx = len(title), *ms.b.Index()
			ms.mu.Unlock()
			held := make(chan struct{})
			src := &heldAtEnd{memSource: ms, hook: func() {
				cw.mu.Lock() // a response being written
				close(held)
			}}
			ends := make(chan EndReason, 4)
			st, err := e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: cw, SSRC: 1,
				OnEnd: func(r EndReason, _ error) { ends <- r }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Play(0); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, 10*time.Second, "the play to wait at the last byte", st.WaitingForFill)
			waitUntil(t, 5*time.Second, "the title's bytes", func() bool { return client.media.Load() == int64(len(title)) })
			ms.reveal(len(title)) // complete: the stream's next step ends the play
			select {
			case <-held:
			case <-time.After(5 * time.Second):
				t.Fatal("the stream did not look at its title again")
			}
			select {
			case r := <-ends:
				if r != EndOfTitle {
					t.Fatalf("OnEnd(%s), want %s", r, EndOfTitle)
				}
			case <-time.After(5 * time.Second):
				cw.mu.Unlock()
				t.Fatal("the play did not end")
			}
			want := int64(len(title))
			if replay {
				if _, err := st.Play(0); err != nil {
					cw.mu.Unlock()
					t.Fatal(err)
				}
				want *= 2
			}
			cw.mu.Unlock()
			select {
			case b := <-client.byes:
				if b.reason != "end of title" || b.media != want {
					t.Errorf("BYE %q after %d media bytes, want %q after %d", b.reason, b.media, "end of title", want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no BYE")
			}
			if replay {
				select {
				case r := <-ends:
					if r != EndOfTitle {
						t.Fatalf("OnEnd(%s) of the second play, want %s", r, EndOfTitle)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("the second play did not end")
				}
			}
			// Nothing follows the BYE over the same byte stream: what is
			// left to read is read at once.
			cli.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			<-client.done
			if got, sent := client.bytes.Load(), st.BytesSent(); got != sent {
				t.Errorf("the client got %d bytes, BytesSent %d", got, sent)
			}
			select {
			case b := <-client.byes:
				t.Errorf("a second BYE %q after %d media bytes", b.reason, b.media)
			default:
			}
			st.Close()
			srv.Close()
			cli.Close()
			waitUntil(t, 5*time.Second, "the stream's goroutines to end", func() bool {
				return runtime.NumGoroutine() <= before
			})
		})
	}
}

// TestAbortByeWaitsForBusyWriter: over TCP, Abort of a playing MP2T
// stream (a session the node ends on its own, or by the manager's order)
// while its connection writer is busy (a response being written) returns
// at once, and the BYE carrying its reason goes once the writer is free,
// counted in BytesSent (it was dropped) from Abort's return on, when the
// session reports its end. A connection closed while the
// BYE waits fails its write: nothing is left behind.
func TestAbortByeWaitsForBusyWriter(t *testing.T) {
	clip := loadClip(t)
	for _, closeConn := range []bool{false, true} {
		name := map[bool]string{false: "busy", true: "busy-closed"}[closeConn]
		t.Run(name, func(t *testing.T) {
			e := startEngine(t, false)
			before := runtime.NumGoroutine()
			srv, cli := tcpPair(t)
			cw := NewConnWriter(srv, 0, 0)
			client := readByeFrames(cli)
			st, err := e.NewStream(StreamConfig{Source: newMemSource(clip), Mode: RTPTCP, Conn: cw, SSRC: 1})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Play(0); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, 5*time.Second, "media", func() bool { return client.media.Load() > 0 })
			var closeFirst func()
			if closeConn {
				closeFirst = func() { srv.Close() }
			}
			reported := abortWhileBusy(t, st, cw, closeFirst)
			if closeConn {
				noByeAfterClose(t, client)
			} else {
				byesAfterAbort(t, client, cli, st, 1, reported)
			}
			srv.Close()
			cli.Close()
			waitUntil(t, 5*time.Second, "the BYE's goroutine to end", func() bool {
				return runtime.NumGoroutine() <= before
			})
		})
	}
}

// TestEndOfTitleByeNotAfterNewPlay: over TCP, an MP2T stream's
// end-of-title BYE that waits for its busy connection writer is not sent
// once a new PLAY has begun: a PLAY with Scale -2 from the end (a rewind:
// Seek(-1), the position unchanged), whose response the client gets
// before the play's Resume, must not be followed by the BYE of the play
// before, which would end the client's new play (RFC 3550 §6.6). Nor is
// it sent after Close (TEARDOWN), and its timer does not outlive the
// stream's end.
func TestEndOfTitleByeNotAfterNewPlay(t *testing.T) {
	clip := loadClip(t)
	title := prefix(t, clip, 1)
	title = title[:len(title)-len(title)%PayloadSize]
	for _, teardown := range []bool{false, true} {
		name := map[bool]string{false: "rewind", true: "teardown"}[teardown]
		t.Run(name, func(t *testing.T) {
			e := startEngine(t, false)
			srv, cli := tcpPair(t)
			cw := NewConnWriter(srv, 0, 0)
			client := readByeFrames(cli)
			ms := newFillingSource(title)
			ms.mu.Lock()
			ms.b.Write(title)
			ms.shown, ms.idx = len(title), *ms.b.Index()
			ms.mu.Unlock()
			held := make(chan struct{})
			src := &heldAtEnd{memSource: ms, hook: func() {
				cw.mu.Lock() // a response being written
				close(held)
			}}
			ends := make(chan EndReason, 4)
			st, err := e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: cw, SSRC: 1,
				OnEnd: func(r EndReason, _ error) { ends <- r }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Play(0); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, 10*time.Second, "the play to wait at the last byte", st.WaitingForFill)
			waitUntil(t, 5*time.Second, "the title's bytes", func() bool { return client.media.Load() == int64(len(title)) })
			ms.reveal(len(title))
			select {
			case <-held:
			case <-time.After(5 * time.Second):
				t.Fatal("the stream did not look at its title again")
			}
			select {
			case r := <-ends:
				if r != EndOfTitle {
					cw.mu.Unlock()
					t.Fatalf("OnEnd(%s), want %s", r, EndOfTitle)
				}
			case <-time.After(5 * time.Second):
				cw.mu.Unlock()
				t.Fatal("the play did not end")
			}
			// The BYE waits for the writer. The client's request comes:
			// as the node handles it, its stream's steps run before the
			// response is written.
			if teardown {
				st.Close()
			} else {
				if _, err := st.Seek(-1); err != nil {
					cw.mu.Unlock()
					t.Fatal(err)
				}
				if got := st.SetScale(-2); got != -2 {
					cw.mu.Unlock()
					t.Fatalf("scale %v granted, want -2", got)
				}
			}
			cw.mu.Unlock() // the response written
			// Before the play's Resume (the node's after-response step),
			// the writer is free for several retries of the BYE.
			select {
			case b := <-client.byes:
				t.Errorf("BYE %q after the response to a new request", b.reason)
			case <-time.After(10 * idleReportRetry):
			}
			st.mu.Lock()
			pending := st.bye.pending()
			st.mu.Unlock()
			if pending {
				t.Error("the BYE's timer still set")
			}
			st.Close()
			srv.Close()
			cli.Close()
			<-client.done
		})
	}
}

// TestEndOfTitleByeUDPNotAfterNewPlay: over UDP an MP2T stream's
// end-of-title BYE, sent ByeDelay after the last RTP packets, is not sent
// once a PLAY with a Range has sought the stream back meanwhile (its
// Seek, before the PLAY's response): only after the response does the
// node Resume the play, and a BYE sent between the two would end the
// client's new play. The new play's own end sends its BYE.
func TestEndOfTitleByeUDPNotAfterNewPlay(t *testing.T) {
	clip := loadClip(t)
	title := prefix(t, clip, 0.5)
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
	ends := make(chan EndReason, 4)
	seeked := make(chan error, 1)
	var st *Stream
	var first atomic.Bool
	st, err := e.NewStream(StreamConfig{Source: newMemSource(title), Mode: RTPUDP, SSRC: 1,
		Dest: rtpC.LocalAddr().(*net.UDPAddr), RTCPDest: rtcpC.LocalAddr().(*net.UDPAddr),
		OnEnd: func(r EndReason, _ error) {
			if r == EndOfTitle && first.CompareAndSwap(false, true) {
				// A PLAY npt=0- as the play ends, well within ByeDelay:
				// its Seek, before its response.
				_, err := st.Seek(0)
				seeked <- err
			}
			ends <- r
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Play(0); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ends:
		if r != EndOfTitle {
			t.Fatalf("OnEnd(%s), want %s", r, EndOfTitle)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the play did not end")
	}
	if err := <-seeked; err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-byes:
		t.Errorf("BYE %q of the play before, after the new PLAY's seek", r)
	case <-time.After(e.ByeDelay + 10*idleReportRetry):
	}
	st.Resume() // the response written
	select {
	case r := <-ends:
		if r != EndOfTitle {
			t.Fatalf("OnEnd(%s) of the second play, want %s", r, EndOfTitle)
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

// aborter is a stream Abort ends: Stream and ESStream.
type aborter interface {
	Abort(reason string) <-chan struct{}
	BytesSent() int64
}

// abortWhileBusy aborts st with reason "evicted" while cw is held, as
// by a response being written, and fails if Abort waits for the writer;
// closeConn, when not nil, runs before the writer is freed (the
// connection gone meanwhile). It returns BytesSent as read once Abort
// returned (what the session's end report reads).
func abortWhileBusy(t *testing.T, st aborter, cw *ConnWriter, closeConn func()) int64 {
	t.Helper()
	cw.mu.Lock() // a response being written
	aborted := make(chan struct{})
	var reported int64
	go func() {
		defer close(aborted)
		st.Abort("evicted")
		reported = st.BytesSent()
	}()
	select {
	case <-aborted:
	case <-time.After(5 * time.Second):
		cw.mu.Unlock()
		t.Fatal("Abort waited for the busy writer")
	}
	if closeConn != nil {
		closeConn()
	}
	cw.mu.Unlock()
	return reported
}

// noByeAfterClose checks that client, whose connection was closed before
// the writer could send the BYEs, got none.
func noByeAfterClose(t *testing.T, client *byeClient) {
	t.Helper()
	<-client.done
	select {
	case b := <-client.byes:
		t.Errorf("BYE %q over a connection closed before it could go", b.reason)
	default:
	}
}

// byesAfterAbort waits for the n BYEs "evicted" (one per track) that
// client, reading cli, gets after abortWhileBusy, then for the end of
// what it reads, and checks that it got BytesSent bytes, as many as
// reported once Abort returned.
func byesAfterAbort(t *testing.T, client *byeClient, cli net.Conn, st aborter, n int, reported int64) {
	t.Helper()
	for i := range n {
		select {
		case b := <-client.byes:
			if b.reason != "evicted" {
				t.Errorf("BYE reason %q, want evicted", b.reason)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of the %d BYEs after Abort", i, n)
		}
	}
	cli.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	<-client.done
	if got, sent := client.bytes.Load(), st.BytesSent(); got != sent || got != reported {
		t.Errorf("the client got %d bytes, BytesSent %d, %d once Abort returned", got, sent, reported)
	}
}

// TestAbortByeCountedOnceWritten: over TCP an MP2T stream's Abort BYE,
// which waits for its busy connection writer, counts in the engine's
// BytesSent (the node's vodnode_sent_bytes_total counter and its load
// reports' egress) only once written, as an ES stream's: it was counted
// as it was handed to the writer, before it was written, and stayed
// counted when the connection closed before it could go. The stream's
// BytesSent (the session's bytes_sent) has it from Abort's return on and
// takes it back when its write fails; the engine's total never goes
// back. Abort's channel is closed once the BYE's write has ended.
func TestAbortByeCountedOnceWritten(t *testing.T) {
	clip := loadClip(t)
	for _, closeConn := range []bool{false, true} {
		t.Run(map[bool]string{false: "busy", true: "busy-closed"}[closeConn], func(t *testing.T) {
			e := startEngine(t, false)
			srv, cli := tcpPair(t)
			cw := NewConnWriter(srv, 0, 0)
			client := readByeFrames(cli)
			st, err := e.NewStream(StreamConfig{Source: newMemSource(clip), Mode: RTPTCP, Conn: cw, SSRC: 1})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Play(0); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, 5*time.Second, "media", func() bool { return client.media.Load() > 0 })
			cw.mu.Lock() // a response being written: the stream's packets wait
			// A packet the pacer wrote just before is counted after its
			// write, under the stream's lock: wait for that count, so
			// that what is scraped has every packet written.
			st.mu.Lock()
			st.mu.Unlock() //lint:ignore SA2001 waiting out the pacer's hold of the lock is the point
			scraped := e.BytesSent()
			quiet := st.Abort("evicted")
			reported := st.BytesSent()
			if got := e.BytesSent(); got != scraped {
				t.Errorf("the engine's BytesSent went from %d to %d at Abort, its BYE not written yet", scraped, got)
			}
			select {
			case <-quiet:
				t.Error("Abort's channel closed before its BYE was written")
			default:
			}
			if closeConn {
				srv.Close() // the client gone meanwhile: the BYE's write fails
			}
			cw.mu.Unlock()
			select {
			case <-quiet:
			case <-time.After(5 * time.Second):
				t.Fatal("Abort's channel not closed after the BYE's write")
			}
			if got := e.BytesSent(); got < scraped {
				t.Errorf("the engine's BytesSent went back from %d to %d", scraped, got)
			}
			if closeConn {
				noByeAfterClose(t, client)
			} else {
				byesAfterAbort(t, client, cli, st, 1, reported)
			}
			cli.Close()
			<-client.done
			if closeConn {
				bye := int64(len(appendFrame(nil, 1, abortByePacket(1, "evicted"))))
				if sent, all := st.BytesSent(), e.BytesSent(); sent != reported-bye || all != scraped {
					t.Errorf("BytesSent %d, the engine's %d, want %d without the BYE not sent and %d", sent, all, reported-bye, scraped)
				}
			} else if got, sent, all := client.bytes.Load(), st.BytesSent(), e.BytesSent(); got != sent || got != all {
				t.Errorf("the client got %d bytes, BytesSent %d, the engine's %d", got, sent, all)
			}
		})
	}
}
