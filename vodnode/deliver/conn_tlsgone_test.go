package deliver

import (
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// dialFrom connects to addr over TCP from the path's namespace, with a
// receive buffer of rcvbuf bytes asked (made on a thread moved into the
// namespace, which then goes back); closed when the test ends.
func (p *narrowPath) dialFrom(t *testing.T, addr string, rcvbuf int) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf) })
	}}
	c, err := inNamespace(p, func() (net.Conn, error) { return d.Dial("tcp", addr) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// An RTSPS viewer whose host is gone (its link down: it answers no
// retransmission or window probe) fails its writer about a timeout after
// the connection last took bytes, as before: the write in flight is
// waited on only for a peer that holds it back alive (a stopped reader:
// TestConnWriterTLSStoppedReaderWaits).
func TestConnWriterTLSHostGoneFails(t *testing.T) {
	p := newPath(t, 1500)
	l, err := net.Listen("tcp", net.JoinHostPort(p.host.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv := p.tlsFrom(t, l)
	const timeout = time.Second
	w := NewConnWriter(srv, 64<<10, timeout)
	defer w.Close()
	chunk := make([]byte, 1400)
	// The viewer reads nothing: its window closes, the writer's batch
	// waits for it, alive.
	for i := 0; i < 200; i++ {
		if _, err := w.TryWrite(chunk); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, 10*time.Second, "the viewer seen holding the stream back, alive", w.PeerHolding)
	// Its host gone: the link down on its side.
	nsIf := strings.TrimSuffix(p.hostIf, "h") + "n"
	if err := ipCmd("-n", p.ns, "link", "set", nsIf, "down"); err != nil {
		t.Fatal(err)
	}
	gone := time.Now()
	// Its window probes go unanswered from the first after the link went
	// down (spaced as the kernel backs them off, doubling from 200 ms
	// while the window stayed closed): once two are, it no longer
	// answers, and the write fails a timeout after it was last seen
	// holding the stream back.
	waitUntil(t, 30*time.Second, "the writer of a viewer whose host is gone failing", func() bool {
		_, err := w.TryWrite(chunk)
		return err != nil
	})
	t.Logf("failed %v after the host went", time.Since(gone).Round(time.Millisecond))
	if w.PeerHolding() {
		t.Fatal("a viewer whose host is gone seen holding the stream back")
	}
}
