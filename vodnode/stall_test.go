package vodnode

import (
	"net"
	"sync"
	"testing"
	"time"
)

// stallProxy forwards TCP connections to an address until stall is
// called; from then on it forwards nothing in either direction and holds
// its connections open, as a stopped process or a network that drops
// packets does (the peer sees no error, only silence).
type stallProxy struct {
	ln      net.Listener
	mu      sync.Mutex
	stalled chan struct{} // closed by stall
	done    chan struct{} // closed at cleanup: the copies end
	conns   []net.Conn
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, stalled: make(chan struct{}), done: make(chan struct{})}
	t.Cleanup(func() {
		close(p.done)
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go p.pipe(up, c)
			go p.pipe(c, up)
		}
	}()
	return p
}

// pipe copies from src to dst until either fails or the proxy stalls.
func (p *stallProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		k, err := src.Read(buf)
		select {
		case <-p.stalled:
			<-p.done // silence until the test ends
			return
		default:
		}
		if k > 0 {
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *stallProxy) addr() string { return p.ln.Addr().String() }

func (p *stallProxy) stall() { close(p.stalled) }

// TestFillFromStalledOriginFails: an origin that stops answering in the
// middle of a fill without closing its connection (a stopped process, a
// black-holed network) is found by gRPC keepalive (pb.Keepalive: a PING
// unanswered within about 20 s): the fill fails after FillRetryFor
// instead of hanging, its viewer's session ends and the bytes filled stay
// as a partial.
func TestFillFromStalledOriginFails(t *testing.T) {
	o := newFakeOrigin(t)
	size := int64(len(o.titles["sample-003"]))
	o.rate = size / 20 // a 20 s fill
	p := newStallProxy(t, startOrigin(t, o))
	n := startNode(t, p.addr(), func(n *Node) {
		n.FillRetryFor = 500 * time.Millisecond
		n.Capacity.DiskBytes = 4 * size
	})
	c := dialRTSP(t, n)
	c.play(nodeURL(n, mint(t, "s1", "sample-003", "node-1", "", time.Minute), "sample-003"))
	if _, _, err := c.frame(); err != nil {
		t.Fatalf("first frame: %v", err)
	}
	p.stall()
	waitFor(t, 60*time.Second, "the fill from the stalled origin to fail and its viewer to end", func() bool {
		return n.Stats().Sessions == 0 && len(n.store.Partials()) == 1
	})
	if got := n.store.Partials()[0].Stored; got <= 0 || got >= size {
		t.Fatalf("partial of %d bytes, want some of %d", got, size)
	}
}
