package vodnode

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// httpConn is an accepted HTTP connection of the node (below TLS when the
// node serves HTTPS) that knows whose title bytes it carried last, so
// that what its socket still holds unacknowledged, once they are known
// lost, is taken back from the session's count (httpSession.bytes): a
// viewer is counted the bytes it took, not those handed to its socket (a
// player that stopped reading, or closed its connection without reading
// them, leaves up to the socket's send buffer unread: several MB, on a
// short title the whole title). They are lost when a write on the
// connection failed (its deadline passed: the player stopped reading; or
// the connection broke), when the peer reset it (it closed it with bytes
// unread), or when the session ends with the connection quiet, no
// request of it in progress, for SessionTimeout (a frozen player); they
// are taken back then, at the connection's close or at the session's
// end, whichever comes first. A connection closed in good order (the
// node's idle close, a request's Connection: close) keeps delivering
// them after: those are counted (as those of a frozen player whose
// connection so closed). What the node's buffers still held when the
// connection broke is the viewer's too (at most a send chunk).
//
// The bytes unacknowledged are the last ones written (TCP delivers in
// order): they are taken from the session whose bytes the connection
// carried last, up to what the connection carried of them since; those
// of a session it carried before another's are left counted. Each byte
// is taken back once: the connection forgets the session when it does.
// Over TLS the bytes unacknowledged include the records' overhead (under
// 0.2% of them), taken as the viewer's too.
type httpConn struct {
	net.Conn
	failed atomic.Bool // a write failed
	mu     sync.Mutex
	hs     *httpSession // the session whose title bytes the connection carried last; nil: none, or taken back
	sent   int64        // bytes of hs's counted as sent on the connection since it carried them
}

// httpConnListener wraps the connections a listener accepts in httpConn,
// their send buffers (SO_SNDBUF) sndbuf bytes when it is set (tests:
// Node.httpSendBuffer).
type httpConnListener struct {
	net.Listener
	sndbuf int
}

func (l httpConnListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(interface{ SetWriteBuffer(int) error }); ok && l.sndbuf > 0 {
		tc.SetWriteBuffer(l.sndbuf)
	}
	return &httpConn{Conn: c}, nil
}

type httpConnKey struct{}

// withHTTPConn is the server's ConnContext: the request's context carries
// its connection's httpConn (httpConnOf).
func withHTTPConn(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if hc, ok := c.(*httpConn); ok {
		ctx = context.WithValue(ctx, httpConnKey{}, hc)
	}
	return ctx
}

// httpConnOf returns the connection of a request's context; nil when it
// has none (a request not from the node's server).
func httpConnOf(ctx context.Context) *httpConn {
	hc, _ := ctx.Value(httpConnKey{}).(*httpConn)
	return hc
}

// countSent counts k bytes of hs's title as sent to its viewer on c (nil:
// no connection known): the session's and the node's counts.
func (c *httpConn) countSent(n *Node, hs *httpSession, k int64) {
	hs.bytes.Add(k)
	n.httpBytes.Add(k)
	if c == nil || k == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hs != hs {
		if c.hs != nil {
			c.hs.dropConn(c)
		}
		c.hs, c.sent = hs, 0
		hs.addConn(c)
	}
	c.sent += k
}

// takeBack forgets the session whose bytes c carried last, hs (nil:
// whichever it is; nothing when it is another), taking the bytes c's
// socket holds unacknowledged from its count, up to what c carried of it,
// when they are lost: lost (the caller knows), a write on c failed, or
// its peer reset it (and the kernel says how many: not off Linux).
func (c *httpConn) takeBack(hs *httpSession, lost bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hs == nil || (hs != nil && c.hs != hs) {
		return
	}
	if lost || c.failed.Load() || peerReset(c.Conn) {
		if q, ok := unackedBytes(c.Conn); ok && q > 0 {
			c.hs.bytes.Add(-min(q, c.sent))
		}
	}
	c.hs.dropConn(c)
	c.hs, c.sent = nil, 0
}

// Close takes back what the socket holds unacknowledged, if lost
// (takeBack), then closes the connection.
func (c *httpConn) Close() error {
	c.takeBack(nil, false)
	return c.Conn.Close()
}

// Write is the connection's; a failure is noted (takeBack).
func (c *httpConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err != nil {
		c.failed.Store(true)
	}
	return n, err
}

// ReadFrom is the connection's (sendfile(2) on a TCP one), for net/http's
// response.ReadFrom; a copy when it has none.
func (c *httpConn) ReadFrom(r io.Reader) (n int64, err error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(r)
	} else {
		n, err = io.Copy(writerOnly{c.Conn}, r)
	}
	if err != nil {
		c.failed.Store(true) // the file's failure too: the connection is closed after it
	}
	return n, err
}

// CloseWrite shuts down the connection's writing side (net/http's close
// of a connection whose request body was not read), when it has one.
func (c *httpConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// addConn notes that c carries hs's bytes (takeConns).
func (hs *httpSession) addConn(c *httpConn) {
	hs.connsMu.Lock()
	defer hs.connsMu.Unlock()
	if hs.conns == nil {
		hs.conns = map[*httpConn]struct{}{}
	}
	hs.conns[c] = struct{}{}
}

// dropConn forgets c.
func (hs *httpSession) dropConn(c *httpConn) {
	hs.connsMu.Lock()
	defer hs.connsMu.Unlock()
	delete(hs.conns, c)
}

// takeBackUnacked takes from hs's count what its connections still open
// hold unacknowledged, as hs ends, when they are lost (httpConn.takeBack):
// quiet, the viewer having made no request for SessionTimeout (or
// PauseTimeout, if shorter), none in progress (a player frozen, its box's power gone: what a viewer reading
// its connection is sent is acknowledged well within that).
func (hs *httpSession) takeBackUnacked(quiet bool) {
	hs.connsMu.Lock()
	conns := make([]*httpConn, 0, len(hs.conns))
	for c := range hs.conns {
		conns = append(conns, c)
	}
	hs.connsMu.Unlock()
	for _, c := range conns {
		c.takeBack(hs, quiet)
	}
}
