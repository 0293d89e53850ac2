package vodnode

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/proto/rtspwire"
	"vodcluster/vodnode/deliver"
)

// tlsHandshakeTimeout bounds an RTSPS client's TLS handshake (a variable
// for tests).
var tlsHandshakeTimeout = 10 * time.Second

// rtspHeadTimeout bounds the time a client's message (a request: its line,
// headers and body; or an interleaved frame) takes to arrive whole once
// its first byte is in, as HTTP's ReadHeaderTimeout does: a request sent a
// byte at a time is answered 408 and the connection closed, not kept for
// the session timeout. A variable for tests.
var rtspHeadTimeout = 10 * time.Second

// maxSessionsPerConn bounds the sessions one RTSP connection may set up.
const maxSessionsPerConn = 64

// rtspConn is one client's RTSP connection.
type rtspConn struct {
	n      *Node
	nc     net.Conn
	cw     *deliver.ConnWriter
	rd     *rtspwire.Reader
	remote netip.Addr
	local  netip.Addr

	mu       sync.Mutex
	sessions map[string]*session        // set up over this connection
	channels map[int]*session           // interleaved channel (RTP and RTCP) -> session
	pending  map[string]*pendingRefusal // SETUPs refused for their Transport, by admission session id
	// described are the admission sessions DESCRIBEd on the connection
	// (abandonDescribed).
	described map[string]described
	// idle: the reader waits for the first byte of the client's next
	// message (waitMessage); closeIdle: closeIfIdle asked to close the
	// connection once it is idle without sessions.
	idle, closeIdle bool

	// aborts counts the connection's sessions the node aborted
	// (finishSession) whose stream may still write to it (an RTCP BYE
	// waiting for the writer, a packet of a play under way); quiet is
	// closed when it drops to 0 (nil while it is 0). Guarded by abortMu,
	// which is taken under Node.mu.
	abortMu sync.Mutex
	aborts  int
	quiet   chan struct{}
}

// rtspError is a request that failed with an RTSP status.
type rtspError struct {
	code   base.StatusCode
	reason string
	header base.Header
	// fixable: the client's request named the wrong thing (a track that
	// does not exist, the aggregate URL of tracks), which it can correct
	// on its connection (retryable).
	fixable bool
}

func (e *rtspError) Error() string { return fmt.Sprintf("%d %s", e.code, e.reason) }

func rtspErr(code base.StatusCode, format string, args ...any) *rtspError {
	return &rtspError{code: code, reason: fmt.Sprintf(format, args...)}
}

// fixableErr is rtspErr for a request the client can correct (fixable).
func fixableErr(code base.StatusCode, format string, args ...any) *rtspError {
	e := rtspErr(code, format, args...)
	e.fixable = true
	return e
}

// unauthorized is a 401 with a Bearer challenge (RFC 6750 §3).
func unauthorized(reason string) *rtspError {
	e := rtspErr(base.StatusUnauthorized, "%s", reason)
	e.header = base.Header{"WWW-Authenticate": base.HeaderValue{
		fmt.Sprintf(`Bearer realm="vodcluster", error="invalid_token", error_description=%q`, reason)}}
	return e
}

// acceptRTSP serves the RTSP (or RTSPS) connections of ln.
func (n *Node) acceptRTSP(ln net.Listener) {
	defer n.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if n.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			n.log.Warn("rtsp accept", "err", err)
			select {
			case <-n.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		sock := nc // an RTSPS connection's TCP socket is under its TLS
		if tc, ok := nc.(*tls.Conn); ok {
			sock = tc.NetConn()
		}
		if tc, ok := sock.(interface{ SetWriteBuffer(int) error }); ok && n.rtspSendBuffer > 0 {
			tc.SetWriteBuffer(n.rtspSendBuffer)
		}
		c := &rtspConn{
			n: n, nc: nc, cw: deliver.NewConnWriter(nc, n.rtspQueue, 0), rd: rtspwire.NewReader(nc),
			sessions: map[string]*session{}, channels: map[int]*session{}, pending: map[string]*pendingRefusal{},
		}
		if ap, err := netip.ParseAddrPort(nc.RemoteAddr().String()); err == nil {
			c.remote = ap.Addr().Unmap()
		}
		if ap, err := netip.ParseAddrPort(nc.LocalAddr().String()); err == nil {
			c.local = ap.Addr().Unmap()
		}
		n.mu.Lock()
		if n.closed {
			n.mu.Unlock()
			nc.Close()
			return
		}
		n.conns[c] = struct{}{}
		n.wg.Add(1)
		n.mu.Unlock()
		go c.serve()
	}
}

// overTLS tells whether c came in through the RTSPS listener.
func (c *rtspConn) overTLS() bool {
	_, ok := c.nc.(*tls.Conn)
	return ok
}

// proto names the connection's protocol as admission tokens do: "rtsps"
// over TLS, else "rtsp".
func (c *rtspConn) proto() string {
	if c.overTLS() {
		return "rtsps"
	}
	return "rtsp"
}

// serve reads requests and interleaved frames until the connection closes;
// then the sessions interleaved in it end.
func (c *rtspConn) serve() {
	defer c.n.wg.Done()
	defer c.close()
	if tc, ok := c.nc.(*tls.Conn); ok {
		// An RTSPS client has tlsHandshakeTimeout to complete its
		// handshake, not the whole session timeout.
		tc.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
		if err := tc.Handshake(); err != nil {
			c.n.log.Debug("rtsps handshake failed", "remote", c.nc.RemoteAddr().String(), "err", err)
			return
		}
		tc.SetDeadline(time.Time{})
	}
	for {
		c.nc.SetReadDeadline(time.Now().Add(c.n.SessionTimeout))
		if err := c.waitMessage(); err != nil {
			// The session timeout passed with no message begun: a
			// connection idle between requests, kept while its
			// sessions are (a TCP-interleaved player's, for the
			// whole play).
			if errors.Is(err, os.ErrDeadlineExceeded) && c.hasSessions() {
				continue
			}
			return
		}
		// The deadline now is rtspHeadTimeout's (waitMessage): passed
		// inside a request, it is a 408 FramingError; inside a frame,
		// the read error. Either way the reader may be left in the
		// middle of a message, never read on.
		msg, err := c.rd.Next()
		if err != nil {
			var fe *rtspwire.FramingError
			if errors.As(err, &fe) {
				c.n.log.Debug("rtsp request unreadable", "remote", c.remote, "status", int(fe.Code), "reason", fe.Reason)
				c.refuseAndClose(fe)
			} else if errors.Is(err, os.ErrDeadlineExceeded) {
				c.n.log.Debug("rtsp interleaved frame not received whole in time", "remote", c.remote, "timeout", rtspHeadTimeout)
			}
			return
		}
		switch m := msg.(type) {
		case *base.Request:
			res, after := c.handle(m)
			if err := c.write(res, m); err != nil {
				return
			}
			if after != nil {
				after()
			}
		case rtspwire.Frame:
			c.onFrame(m.Channel)
		}
	}
}

// waitMessage waits for the first byte of the client's next message, the
// connection idle meanwhile: closeIfIdle may close it then (its read
// deadline set to now), or at once when it asked to while a request was
// handled and none of the connection's sessions is left. Once the first
// byte is in, the read deadline is rtspHeadTimeout from then, for the
// message to arrive whole; a message whose first byte came as the
// connection was being closed is read on so too: only a connection idle
// between requests is closed, never one with a request in flight (its
// bytes read, or being handled). It returns the read error; the message
// is left to rd.Next.
func (c *rtspConn) waitMessage() error {
	c.mu.Lock()
	c.idle = true
	if c.closeIdle {
		if len(c.sessions) == 0 {
			// What is buffered already (a request sent right behind
			// the last) is still served: Wait peeks it without a read.
			c.nc.SetReadDeadline(time.Now())
		} else {
			c.closeIdle = false // a session set up since: the connection is in use
		}
	}
	c.mu.Unlock()
	err := c.rd.Wait()
	c.mu.Lock()
	c.idle = false
	if err == nil {
		c.closeIdle = false
	}
	c.mu.Unlock()
	if err == nil {
		// After idle is false, closeIfIdle leaves the deadline alone:
		// this one, set after any it set, stands.
		c.nc.SetReadDeadline(time.Now().Add(rtspHeadTimeout))
	}
	return err
}

// closeIfIdle closes the connection when it has no session left (the
// janitor ended its last one): at once when its reader is idle between
// requests, else once it is (waitMessage), so that a request in flight
// (its first bytes read, or being handled) is answered, not cut. A
// session set up by that request keeps the connection open.
func (c *rtspConn) closeIfIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sessions) > 0 {
		return
	}
	c.closeIdle = true
	if c.idle {
		c.nc.SetReadDeadline(time.Now())
	}
}

// refuseAndClose answers a message that could not be read and closes the
// connection gracefully: the response is sent, the writing side shut, and
// what the client still sends is read away for a moment (so that the
// kernel does not reset the connection before the client reads the
// response).
func (c *rtspConn) refuseAndClose(fe *rtspwire.FramingError) {
	res := errResponse(rtspErr(fe.Code, "%s", fe.Reason))
	res.Header["Connection"] = base.HeaderValue{"close"}
	if fe.CSeq != "" {
		res.Header["CSeq"] = base.HeaderValue{fe.CSeq}
	}
	if c.write(res, nil) != nil {
		return
	}
	if tc, ok := c.nc.(interface{ CloseWrite() error }); ok {
		tc.CloseWrite()
		c.nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		io.Copy(io.Discard, io.LimitReader(c.nc, 1<<20))
	}
}

// write sends res, echoing the request's CSeq (none for a request with
// several), once the streams of the connection's sessions the node is
// aborting have written what they had to (awaitAborts): whatever the
// request (a TEARDOWN, a PLAY, a keepalive), its answer, 454 for such a
// session, never precedes that session's RTCP BYE on the connection.
func (c *rtspConn) write(res *base.Response, req *base.Request) error {
	if res.Header == nil {
		res.Header = base.Header{}
	}
	if req != nil {
		if v := req.Header["CSeq"]; len(v) == 1 && rtspwire.ValidCSeq(v[0]) {
			res.Header["CSeq"] = base.HeaderValue{strings.TrimSpace(v[0])}
		}
	}
	res.Header["Server"] = base.HeaderValue{"vodcluster"}
	b, err := res.Marshal()
	if err != nil {
		return err
	}
	c.awaitAborts()
	_, err = c.cw.Write(b)
	return err
}

// onFrame keeps alive the session whose interleaved channel pair carried a
// frame from the client (RTCP receiver reports).
func (c *rtspConn) onFrame(ch int) {
	c.mu.Lock()
	s := c.channels[ch]
	c.mu.Unlock()
	if s != nil {
		s.touch(time.Now())
	}
}

func (c *rtspConn) hasSessions() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions) > 0
}

// adopt records s as set up over this connection with the first entry of
// specs (a SETUP's Transport list, in the client's order) it can serve,
// written to into: for TCP, with that entry's interleaved channels (the
// ones asked for, or the first free pair). An entry whose channels are in
// use, or a TCP entry when none is free, is skipped for the next one, as
// for an entry the node cannot serve at all (docs/delivery.md,
// Transports). Errors: too many sessions on the connection (453); no
// entry left (461, the first entry's reason).
func (c *rtspConn) adopt(s *session, specs []transportSpec, into *transportSpec) *rtspError {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.sessions[s.id]; !ok && len(c.sessions) >= maxSessionsPerConn {
		return rtspErr(base.StatusNotEnoughBandwidth, "too many sessions on one connection (%d)", maxSessionsPerConn)
	}
	var refused *rtspError
	for _, spec := range specs {
		if spec.Mode == deliver.RTPTCP {
			ch := spec.Interleaved[0]
			if ch < 0 {
				for ch = 0; c.channels[ch] != nil || c.channels[ch+1] != nil; ch += 2 {
				}
				if ch > 254 {
					refused = cmp.Or(refused, rtspErr(base.StatusUnsupportedTransport, "no free interleaved channel"))
					continue
				}
			} else if c.channels[ch] != nil || c.channels[ch+1] != nil {
				// An odd pair (1-2) is allowed; it must not overlap another.
				refused = cmp.Or(refused, rtspErr(base.StatusUnsupportedTransport, "interleaved channels %d-%d in use", ch, ch+1))
				continue
			}
			spec.Interleaved = [2]int{ch, ch + 1}
			c.channels[ch], c.channels[ch+1] = s, s
		}
		*into = spec
		c.sessions[s.id] = s
		return nil
	}
	if refused == nil {
		refused = rtspErr(base.StatusUnsupportedTransport, "no transport entry to serve")
	}
	return refused
}

// aborting counts a session of the connection being aborted, whose
// stream may still write to it; the caller calls the function returned
// (once) when nothing more of it is to be written.
func (c *rtspConn) aborting() func() {
	c.abortMu.Lock()
	defer c.abortMu.Unlock()
	if c.aborts == 0 {
		c.quiet = make(chan struct{})
	}
	c.aborts++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.abortMu.Lock()
			defer c.abortMu.Unlock()
			if c.aborts--; c.aborts == 0 {
				close(c.quiet)
				c.quiet = nil
			}
		})
	}
}

// awaitAborts waits until the streams of the connection's sessions being
// aborted (aborting) have written what they had to write, or failed to,
// up to twice the writer's timeout (each of their writes gives up within
// one, and a writer failed fails the rest at once); write calls it before
// every answer.
func (c *rtspConn) awaitAborts() {
	c.abortMu.Lock()
	quiet := c.quiet
	c.abortMu.Unlock()
	if quiet == nil {
		return
	}
	t := time.NewTimer(2 * c.cw.Timeout())
	defer t.Stop()
	select {
	case <-quiet:
	case <-t.C:
		c.n.log.Warn("an aborted session's writes still pending: request answered", "remote", c.remote)
	}
}

// forget drops an ended session from the connection.
func (c *rtspConn) forget(s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sessions, s.id)
	for ch, cs := range c.channels {
		if cs == s {
			delete(c.channels, ch)
		}
	}
}

// unackedFor returns the bytes the connection holds that its peer has not
// acknowledged, queued in its writer or in its socket (unackedBytes),
// when s is the only session interleaved in it, so that they are its
// stream's; 0 otherwise, when the kernel does not say, and over RTSPS:
// there the writer's batch being written is partly in the socket already
// (as TLS records, SIOCOUTQ counting them too), and how much is not
// known, so what was handed to TLS is counted.
func (c *rtspConn) unackedFor(s *session) int64 {
	if _, ok := c.nc.(*tls.Conn); ok {
		return 0
	}
	c.mu.Lock()
	for _, cs := range c.channels {
		if cs != s {
			c.mu.Unlock()
			return 0
		}
	}
	c.mu.Unlock()
	q, ok := unackedBytes(c.nc)
	if !ok {
		return 0
	}
	return q + int64(c.cw.Queued())
}

// close ends the sessions interleaved in the connection (UDP sessions live
// on, RFC 2326 §1.1: a session is not bound to a connection) and forgets it.
func (c *rtspConn) close() {
	if c.cw.Failed() {
		// A TLS connection whose write failed (timed out) takes no
		// close alert: sent, it would follow a record cut short, and
		// wait up to 5 s on a dead host's full socket.
		deliver.CloseNow(c.nc)
	} else {
		c.nc.Close()
	}
	c.cw.Close()
	c.mu.Lock()
	var tcp []*session
	for _, s := range c.sessions {
		if s.spec.Mode == deliver.RTPTCP {
			tcp = append(tcp, s)
		}
	}
	c.mu.Unlock()
	for _, s := range tcp {
		c.n.endSession(s, string(deliver.EndClosed), nil)
	}
	c.settleAll()
	c.abandonDescribed()
	c.n.mu.Lock()
	delete(c.n.conns, c)
	c.n.mu.Unlock()
}

// handle answers one request; after, when not nil, runs once the response
// is written (PLAY starts the stream only then).
func (c *rtspConn) handle(req *base.Request) (*base.Response, func()) {
	switch v, ok := req.Header["CSeq"]; {
	case !ok:
		return errResponse(rtspErr(base.StatusBadRequest, "missing CSeq")), nil
	case len(v) != 1:
		// Which would the answer carry? Refused, as the front door does.
		return errResponse(rtspErr(base.StatusBadRequest, "more than one CSeq")), nil
	case !rtspwire.ValidCSeq(v[0]):
		// RFC 2326 §12.17: CSeq is 1*DIGIT. Not echoed (write).
		return errResponse(rtspErr(base.StatusBadRequest, "CSeq is not a number")), nil
	}
	if v, ok := req.Header["Require"]; ok && len(v) > 0 && strings.TrimSpace(v[0]) != "" {
		e := rtspErr(base.StatusOptionNotSupported, "option not supported")
		e.header = base.Header{"Unsupported": v}
		return errResponse(e), nil
	}
	var res *base.Response
	var after func()
	var err *rtspError
	switch req.Method {
	case base.Options:
		res = c.options(req)
	case base.Describe:
		res, err = c.describe(req)
	case base.Setup:
		res, err = c.setup(req)
	case base.Play:
		res, after, err = c.play(req)
	case base.Pause:
		res, err = c.pause(req)
	case base.Teardown:
		res, err = c.teardown(req)
	case base.GetParameter, base.SetParameter:
		res, err = c.parameter(req)
	case base.Announce, base.Record, "REDIRECT", "PLAY_NOTIFY":
		// RTSP methods a VOD node does not accept (RFC 2326 §10, RFC 7826 §13)
		err = rtspErr(base.StatusMethodNotAllowed, "method %s not allowed", req.Method)
		err.header = base.Header{"Allow": base.HeaderValue{publicMethods}}
	default:
		err = rtspErr(base.StatusNotImplemented, "method %s not implemented", req.Method)
		err.header = base.Header{"Public": base.HeaderValue{publicMethods}}
	}
	if err != nil {
		c.n.log.Debug("rtsp request refused", "method", req.Method, "remote", c.remote, "status", int(err.code), "reason", err.reason)
		return errResponse(err), after // a refused PLAY's: its session's end (play)
	}
	return res, after
}

const publicMethods = "OPTIONS, DESCRIBE, SETUP, PLAY, PAUSE, TEARDOWN, GET_PARAMETER, SET_PARAMETER"

func errResponse(e *rtspError) *base.Response {
	h := base.Header{"Content-Type": base.HeaderValue{"text/plain"}}
	for k, v := range e.header {
		h[k] = v
	}
	res := &base.Response{StatusCode: e.code, Header: h, Body: []byte(e.reason + "\n")}
	if e.code == base.StatusFound {
		res.StatusMessage = "Moved Temporarily" // RFC 2326 section 7.1.1, as the front door's
	}
	return res
}
