package deliver

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/rtcp"
)

// cutSource is a complete title whose file ends at cut, short of its
// index (a file cut under the node): a read past cut returns the bytes
// before it and io.EOF, as os.File.ReadAt does. onFail, when set, runs
// once, at the first such read, on the reader's goroutine (an MP2T
// stream's lock held).
type cutSource struct {
	*memSource
	cut    int64
	once   sync.Once
	onFail func()
}

func (s *cutSource) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) <= s.cut {
		return s.memSource.ReadAt(p, off)
	}
	if s.onFail != nil {
		s.once.Do(s.onFail)
	}
	n := 0
	if off < s.cut {
		n = copy(p, s.data[off:s.cut])
	}
	return n, io.EOF
}

// wireCount counts what a client receives of one stream (RTP and RTCP,
// UDP payloads or interleaved frames with their 4-byte header) and
// notes the reason of the first RTCP BYE.
type wireCount struct {
	bytes atomic.Int64
	bye   chan string // the BYE's reason, once
	once  sync.Once
	wg    sync.WaitGroup
}

func (w *wireCount) rtcp(b []byte) {
	ps, err := rtcp.Unmarshal(b)
	if err != nil {
		return
	}
	for _, p := range ps {
		if g, ok := p.(*rtcp.Goodbye); ok {
			w.once.Do(func() { w.bye <- g.Reason })
		}
	}
}

// readUDP counts the datagrams of c until its read deadline passes or it
// is closed; rtcpPort: they are RTCP.
func (w *wireCount) readUDP(c *net.UDPConn, rtcpPort bool) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		buf := make([]byte, 65536)
		for {
			n, _, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			w.bytes.Add(int64(n))
			if rtcpPort {
				w.rtcp(buf[:n])
			}
		}
	}()
}

// readTCP counts the interleaved frames of c (RTCP on odd channels) until
// its read deadline passes or it is closed.
func (w *wireCount) readTCP(c net.Conn) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		hdr, buf := make([]byte, 4), make([]byte, 65536)
		for {
			if _, err := io.ReadFull(c, hdr); err != nil {
				return
			}
			l := int(hdr[2])<<8 | int(hdr[3])
			if _, err := io.ReadFull(c, buf[:l]); err != nil {
				return
			}
			w.bytes.Add(int64(4 + l))
			if hdr[1]%2 == 1 {
				w.rtcp(buf[:l])
			}
		}
	}()
}

// diskReadRig is one stream of a cutSource and its client's sockets.
type diskReadRig struct {
	st    interface{ BytesSent() int64 }
	close func()
	ends  chan ended
	atEnd atomic.Int64 // the stream's BytesSent as OnEnd was called
	wire  *wireCount
	// deadline sets the read deadline of the client's sockets
	deadline func(time.Time)
	cw       *ConnWriter // TCP: the stream's connection writer
}

// newDiskReadRig plays src (MP2T or elementary streams, one track) over
// mode (RTPUDP or RTPTCP) on e, its client counting what it receives.
func newDiskReadRig(t *testing.T, e *Engine, es bool, mode Mode, src *cutSource) *diskReadRig {
	t.Helper()
	r := &diskReadRig{ends: make(chan ended, 1), wire: &wireCount{bye: make(chan string, 1)}}
	onEnd := func(reason EndReason, err error) {
		r.atEnd.Store(r.st.BytesSent())
		r.ends <- ended{reason, err}
	}
	var rtpC, rtcpC *net.UDPConn
	var srv, cli net.Conn
	if mode == RTPUDP {
		rtpC, rtcpC = listenUDP(t), listenUDP(t)
		r.wire.readUDP(rtpC, false)
		r.wire.readUDP(rtcpC, true)
		r.deadline = func(at time.Time) { rtpC.SetReadDeadline(at); rtcpC.SetReadDeadline(at) }
	} else {
		srv, cli = tcpPair(t)
		r.cw = NewConnWriter(srv, 0, 0)
		r.wire.readTCP(cli)
		r.deadline = func(at time.Time) { cli.SetReadDeadline(at) }
	}
	t.Cleanup(func() {
		r.deadline(time.Now())
		r.wire.wg.Wait()
	})
	if !es {
		cfg := StreamConfig{Source: src, Mode: mode, Conn: r.cw, SSRC: 1, OnEnd: onEnd}
		if mode == RTPUDP {
			cfg.Dest, cfg.RTCPDest = rtpC.LocalAddr().(*net.UDPAddr), rtcpC.LocalAddr().(*net.UDPAddr)
		}
		st, err := e.NewStream(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r.st, r.close = st, st.Close
		// set before the play: OnEnd reads it
		if _, err := st.Play(0); err != nil {
			t.Fatal(err)
		}
		return r
	}
	tr, err := ProbeES(context.Background(), newMemSource(loadClip(t)))
	if err != nil {
		t.Fatal(err)
	}
	cfg := ESConfig{Source: src, Tracks: tr, Mode: mode, Conn: r.cw, Channel: [2]int{0, -1}, SSRC: [2]uint32{1, 2}, OnEnd: onEnd}
	if mode == RTPUDP {
		cfg.Dest[0], cfg.RTCP[0] = rtpC.LocalAddr().(*net.UDPAddr), rtcpC.LocalAddr().(*net.UDPAddr)
	}
	st, err := e.NewESStream(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.st, r.close = st, st.Close
	if _, err := st.Seek(0); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	return r
}

// TestDiskReadEndsAfterBye: a stream whose title's file ends short of its
// index (MP2T and elementary streams, over UDP and TCP) ends with
// EndDiskRead and a *ReadError (io.ErrUnexpectedEOF, at an offset before
// the cut), and its client gets an RTCP BYE with reason
// "disk-read-error" (a hyphenated token, as every end reason) before
// OnEnd is called: the stream's BytesSent as OnEnd is called (what the
// node reports as the session's bytes_sent) is every byte its client
// got, the BYE included, and nothing is sent after. (Over UDP, whose BYE
// follows the last RTP packet by ByeDelay, OnEnd came first and the BYE
// was left out of bytes_sent, while over TCP it was counted.) Over TCP
// an MP2T stream's BYE waits for a connection writer busy with a response
// (it was dropped, the client left waiting in silence).
func TestDiskReadEndsAfterBye(t *testing.T) {
	clip := loadClip(t)
	title := prefix(t, clip, 3)
	cut := int64(len(prefix(t, clip, 0.8))) + 100 // within a TS packet
	for _, c := range []struct {
		name string
		es   bool
		mode Mode
		busy bool // the connection writer busy when the read fails
	}{
		{"mp2t-udp", false, RTPUDP, false},
		{"mp2t-tcp", false, RTPTCP, false},
		{"mp2t-tcp-busy", false, RTPTCP, true},
		{"es-udp", true, RTPUDP, false},
		{"es-tcp", true, RTPTCP, false},
		// (an ES stream's BYE over TCP is written as a response is,
		// waiting for the writer, after its play's last packets, which
		// a writer held from the media does not let go)
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t, c.mode == RTPUDP)
			src := &cutSource{memSource: newMemSource(title), cut: cut}
			ready := make(chan *diskReadRig, 1)
			rig := sync.OnceValue(func() *diskReadRig { return <-ready })
			released := make(chan struct{})
			if c.busy {
				// A response being written as the read fails: the writer
				// is held until the stream has ended (its step, which
				// holds the stream's lock, is over).
				src.onFail = func() {
					r := rig()
					r.cw.mu.Lock()
					go func() {
						defer close(released)
						defer r.cw.mu.Unlock()
						waitEnded(t, r)
					}()
				}
			} else {
				close(released)
			}
			r := newDiskReadRig(t, e, c.es, c.mode, src)
			ready <- r
			var d ended
			select {
			case d = <-r.ends:
			case <-time.After(10 * time.Second):
				t.Fatal("the stream did not end")
			}
			<-released
			var re *ReadError
			if d.reason != EndDiskRead || !errors.As(d.err, &re) || !errors.Is(d.err, io.ErrUnexpectedEOF) || re.Off > cut {
				t.Fatalf("OnEnd(%q, %v), want %q and a ReadError at or before %d", d.reason, d.err, EndDiskRead, cut)
			}
			select {
			case reason := <-r.wire.bye:
				if reason != "disk-read-error" {
					t.Errorf("BYE reason %q, want disk-read-error", reason)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no RTCP BYE")
			}
			// The RTP packets went ByeDelay before the BYE over UDP, in
			// the same byte stream over TCP: what is left to read is
			// read at once.
			r.deadline(time.Now().Add(200 * time.Millisecond))
			r.wire.wg.Wait()
			if got, at := r.st.BytesSent(), r.atEnd.Load(); got != at {
				t.Errorf("BytesSent %d as OnEnd was called, %d after (%+d)", at, got, got-at)
			}
			if got, at := r.wire.bytes.Load(), r.atEnd.Load(); got != at {
				t.Errorf("BytesSent %d as OnEnd was called, the client got %d bytes (%+d)", at, got, got-at)
			}
		})
	}
}

// waitEnded waits, 5 s at most, until r's stream has ended for good.
func waitEnded(t *testing.T, r *diskReadRig) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var done bool
		switch st := r.st.(type) {
		case *Stream:
			st.mu.Lock()
			done = st.state == stateEnded
			st.mu.Unlock()
		case *ESStream:
			st.mu.Lock()
			done = st.ended
			st.mu.Unlock()
		}
		if done {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Error("the stream did not end within 5 s")
}

// TestDiskReadNoByeAfterClose: a stream over UDP closed (TEARDOWN, the
// node shutting down) after its read failed, before its BYE was due
// (ByeDelay after its last RTP packet), sends no BYE: the session has
// ended otherwise, nothing more goes to its client. OnEnd still hears the
// read's failure (the node counts it).
func TestDiskReadNoByeAfterClose(t *testing.T) {
	clip := loadClip(t)
	title := prefix(t, clip, 3)
	cut := int64(len(prefix(t, clip, 0.8)))
	for _, es := range []bool{false, true} {
		name := map[bool]string{false: "mp2t", true: "es"}[es]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t, true)
			src := &cutSource{memSource: newMemSource(title), cut: cut}
			ready := make(chan *diskReadRig, 1)
			closed := make(chan struct{})
			src.onFail = func() {
				go func() {
					defer close(closed)
					r := <-ready
					waitEnded(t, r)
					r.close()
				}()
			}
			r := newDiskReadRig(t, e, es, RTPUDP, src)
			ready <- r
			select {
			case <-closed:
			case <-time.After(10 * time.Second):
				t.Fatal("the read did not fail")
			}
			// Nothing can be awaited for a BYE that must not come: the
			// client listens for twice the delay it would have come after.
			select {
			case reason := <-r.wire.bye:
				t.Errorf("BYE %q after Close", reason)
			case <-time.After(2 * e.ByeDelay):
			}
			select {
			case d := <-r.ends:
				if d.reason != EndDiskRead {
					t.Errorf("OnEnd(%q, %v), want %q", d.reason, d.err, EndDiskRead)
				}
			case <-time.After(5 * time.Second):
				t.Error("OnEnd not called")
			}
		})
	}
}
