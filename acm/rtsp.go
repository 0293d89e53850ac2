package acm

import (
	"context"
	"crypto/tls"
	"errors"
	"hash/maphash"
	"io"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/bluenviron/gortsplib/v4/pkg/conn"

	"vodcluster/acm/auth"
	"vodcluster/acm/store"
	"vodcluster/proto/rtspwire"
	"vodcluster/proto/token"
)

// RTSP front door timeouts.
const (
	rtspIdle         = 60 * time.Second // a connection with no request for this long is closed
	rtspWriteTimeout = 10 * time.Second
)

// rtspHeadTimeout bounds the time a client's message (a request: its line,
// headers and body; or an interleaved frame) takes to arrive whole once
// its first byte is in, as the HTTP front door's ReadHeaderTimeout does: a
// request sent a byte at a time is answered 408 and the connection
// closed, not kept for rtspIdle. A variable for tests.
var rtspHeadTimeout = 10 * time.Second

const rtspPublic = "OPTIONS, DESCRIBE, SETUP, PLAY, GET_PARAMETER, SET_PARAMETER, TEARDOWN"

// rtspServer is the RTSP front door: one goroutine per connection reading
// requests and one answering them, so a request waiting for admission
// blocks only its own connection and a client that disconnects leaves the
// queue at once. It answers OPTIONS and keepalives itself and redirects
// DESCRIBE (and SETUP or PLAY without a session, from clients that skip
// DESCRIBE) to the chosen node. Built on gortsplib's base and conn
// packages: sessions live on the nodes, never here.
type rtspServer struct {
	m  *Manager
	wg sync.WaitGroup

	mu     sync.Mutex
	lns    []net.Listener // RTSP, and RTSPS when set up
	conns  map[net.Conn]struct{}
	closed bool
}

// serve accepts the connections of ln (the RTSP or the RTSPS listener)
// until close.
func (s *rtspServer) serve(ln net.Listener) {
	s.mu.Lock()
	s.lns = append(s.lns, ln)
	s.mu.Unlock()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.m.log.Warn("rtsp: accept failed", "err", err, "retry_in", delay)
			select {
			case <-time.After(delay):
			case <-s.m.ctx.Done():
				return
			}
			continue
		}
		delay = 0
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.conns[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.handle(nc)
	}
}

func (s *rtspServer) close() {
	s.mu.Lock()
	s.closed = true
	for _, ln := range append(s.lns, s.m.rtspLn, s.m.rtspsLn) {
		if ln != nil {
			ln.Close() // a second Close of one is harmless
		}
	}
	for c := range s.conns {
		if tc, ok := c.(*tls.Conn); ok {
			c = tc.NetConn() // no close-notify (up to 5 s to a client that does not read) under mu
		}
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

type rtspItem struct {
	req *base.Request
	err error
}

func (s *rtspServer) handle(nc net.Conn) {
	defer func() {
		nc.Close()
		s.mu.Lock()
		delete(s.conns, nc)
		s.mu.Unlock()
		s.wg.Done()
	}()
	if !handshake(nc) {
		return
	}
	ctx, cancel := context.WithCancel(s.m.ctx)
	defer cancel()
	rc := conn.NewConn(nc) // writes responses; requests come through rd
	rd := rtspwire.NewReader(nc)
	items := make(chan rtspItem)
	readerDone := make(chan struct{})
	admitted := map[string]string{} // title -> session granted on this connection
	go func() {
		defer close(readerDone)
		defer cancel() // the client went away (or sent garbage): leave the queue
		for {
			// Idle between requests: up to rtspIdle for a message's
			// first byte; then rtspHeadTimeout for the rest of it, a
			// deadline passed then being a 408 FramingError from Next
			// (a frame's, a read error: the reader is left at once).
			nc.SetReadDeadline(time.Now().Add(rtspIdle))
			if rd.Wait() != nil {
				return
			}
			nc.SetReadDeadline(time.Now().Add(rtspHeadTimeout))
			msg, err := rd.Next()
			if err != nil && isNetErr(err) {
				return
			}
			req, _ := msg.(*base.Request)
			if err == nil && req == nil {
				continue // an interleaved frame or nothing for the front door
			}
			select {
			case items <- rtspItem{req, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() { nc.Close(); <-readerDone }()

	for {
		var it rtspItem
		select {
		case it = <-items:
		case <-ctx.Done():
			return
		}
		var res *base.Response
		granted := ""
		if it.err != nil {
			// Unreadable (RFC 2326 §6): 400, or 505 for another RTSP
			// version, with the CSeq when one was found; then close.
			// A request not received whole within rtspHeadTimeout is
			// one too: 408.
			res = &base.Response{StatusCode: base.StatusBadRequest, Header: base.Header{"Connection": {"close"}}}
			var fe *rtspwire.FramingError
			if errors.As(it.err, &fe) {
				s.m.log.Debug("rtsp request unreadable", "client", nc.RemoteAddr().String(), "status", int(fe.Code), "reason", fe.Reason)
				res.StatusCode = fe.Code
				res.StatusMessage = statusWithReason(fe.Code, fe.Reason)
				if fe.CSeq != "" {
					res.Header["CSeq"] = base.HeaderValue{fe.CSeq}
				}
			}
		} else {
			res, granted = s.respond(ctx, nc, it.req, admitted)
		}
		if res == nil {
			return // the client left while waiting
		}
		res.Header["Server"] = base.HeaderValue{"vodcluster-acm"}
		nc.SetWriteDeadline(time.Now().Add(rtspWriteTimeout))
		if err := rc.WriteResponse(res); err != nil {
			if granted != "" {
				s.m.abandon(granted, "redirect not delivered")
			}
			return
		}
		if it.err != nil {
			// Close gracefully: what the client still sends is read away
			// for a moment, so that the kernel does not reset the
			// connection before the client reads the response.
			if tc, ok := nc.(interface{ CloseWrite() error }); ok {
				tc.CloseWrite()
				nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
				io.Copy(io.Discard, io.LimitReader(nc, 1<<20))
			}
			return
		}
	}
}

func isNetErr(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || errors.As(err, &ne)
}

// respond answers one request; a nil response means the client went
// away. granted is the id of the session a 302 carries.
func (s *rtspServer) respond(ctx context.Context, nc net.Conn, req *base.Request, admitted map[string]string) (res *base.Response, granted string) {
	res = &base.Response{Header: base.Header{}}
	cseq := req.Header["CSeq"]
	if len(cseq) != 1 {
		res.StatusCode = base.StatusBadRequest
		res.StatusMessage = "Bad Request (want one CSeq header)"
		return res, ""
	}
	if !rtspwire.ValidCSeq(cseq[0]) {
		// RFC 2326 §12.17: CSeq is 1*DIGIT; not echoed.
		res.StatusCode = base.StatusBadRequest
		res.StatusMessage = "Bad Request (CSeq is not a number)"
		return res, ""
	}
	res.Header["CSeq"] = base.HeaderValue{strings.TrimSpace(cseq[0])}
	if v, ok := req.Header["Require"]; ok && len(v) > 0 && strings.TrimSpace(v[0]) != "" {
		// No option is supported (RFC 2326 12.32): refused before any
		// admission, as the node would refuse it after one.
		res.StatusCode = base.StatusOptionNotSupported
		res.Header["Unsupported"] = v
		return res, ""
	}
	_, hasSession := req.Header["Session"]
	switch req.Method {
	case base.Options:
		res.StatusCode = base.StatusOK
		res.Header["Public"] = base.HeaderValue{rtspPublic}
	case base.Describe, base.Setup:
		if hasSession && req.Method == base.Setup {
			// Sessions live on the nodes; this one is not ours.
			res.StatusCode = base.StatusSessionNotFound
			return res, ""
		}
		if req.Method == base.Describe && !rtspwire.AcceptsSDP(req.Header["Accept"]) {
			// refused before any admission, as the node would refuse it
			res.StatusCode = base.StatusNotAcceptable
			res.StatusMessage = "Not Acceptable (the description is application/sdp)"
			return res, ""
		}
		return s.admit(ctx, nc, req, res, admitted)
	case base.Play:
		// PLAY belongs to a session set up on a node (RFC 2326 A.1: PLAY
		// before SETUP is 455); a session id here is not ours.
		res.StatusCode = base.StatusMethodNotValidInThisState
		if hasSession {
			res.StatusCode = base.StatusSessionNotFound
		}
	case base.GetParameter, base.SetParameter:
		res.StatusCode = base.StatusOK
		switch {
		case hasSession:
			res.StatusCode = base.StatusSessionNotFound
		case req.Method == base.SetParameter && strings.TrimSpace(string(req.Body)) != "":
			// RFC 2326 §10.9: the front door sets no parameter. An
			// empty body (a set-top box's keepalive) stays 200.
			res.StatusCode = base.StatusParameterNotUnderstood
			res.StatusMessage = "Parameter Not Understood (the front door sets no parameter)"
		}
	case base.Teardown, base.Pause:
		res.StatusCode = base.StatusMethodNotValidInThisState
		if hasSession {
			res.StatusCode = base.StatusSessionNotFound
		}
	case base.Announce, base.Record, "REDIRECT", "PLAY_NOTIFY":
		// Methods of RTSP a server may not be sent by a player (REDIRECT
		// and PLAY_NOTIFY go server to client): 405, as the nodes answer.
		res.StatusCode = base.StatusMethodNotAllowed
		res.Header["Allow"] = base.HeaderValue{rtspPublic}
	default:
		res.StatusCode = base.StatusNotImplemented
		res.Header["Public"] = base.HeaderValue{rtspPublic}
	}
	return res, ""
}

// vodPath splits "/vod/<title>[/<rest>]" into the title and "/<rest>",
// where rest is what a node serves after a title: "/es" (elementary
// streams), then a track's control "/trackID=N", then "/", each optional
// (vodnode's parseTarget). Any other rest (another path, "..") is not a
// path of the front door (404): admitted, its viewer would be refused at
// the node.
func vodPath(p string) (title, rest string, ok bool) {
	p, ok = strings.CutPrefix(p, "/vod/")
	if !ok {
		return "", "", false
	}
	title, rest, _ = strings.Cut(p, "/")
	if rest != "" {
		rest = "/" + rest
	}
	if !restPattern.MatchString(rest) {
		return "", "", false
	}
	return title, rest, idPattern.MatchString(title)
}

// restPattern is the part of an RTSP URL after /vod/<title> that nodes
// serve (vodPath).
var restPattern = regexp.MustCompile(`^(/es)?(/trackID=[0-9]{1,3})?/?$`)

// admit authenticates, charges to the subscriber's request limit
// (Manager.RequestsPerUser), admits and redirects a DESCRIBE or SETUP.
// A DESCRIBE or SETUP of a title already granted on this connection
// (admitted: title -> session), whose viewer has not reached its node
// yet, gets a new token for that session rather than a second admission:
// players repeat DESCRIBE (after a 401, before SETUP), and each
// admission would hold a reservation and a slot of the subscriber's.
func (s *rtspServer) admit(ctx context.Context, nc net.Conn, req *base.Request, res *base.Response, admitted map[string]string) (*base.Response, string) {
	m := s.m
	if req.URL == nil { // "*": no title
		res.StatusCode = base.StatusNotFound
		res.StatusMessage = notTitleURL
		return res, ""
	}
	u := (*url.URL)(req.URL)
	// The title is matched decoded (%2D is '-', RFC 3986 6.2.2.2); what
	// follows it goes into the redirect as the client escaped it, never
	// decoded (a decoded CR LF would split the response's headers).
	escTitle, rest, _ := vodPath(u.EscapedPath())
	title, err := url.PathUnescape(escTitle)
	if err != nil || !idPattern.MatchString(title) {
		res.StatusCode = base.StatusNotFound
		res.StatusMessage = notTitleURL
		return res, ""
	}
	var needsUDP bool // a SETUP that offers only UDP
	if req.Method == base.Setup {
		var code base.StatusCode
		var reason string
		if code, reason, needsUDP = m.refuseSetup(nc, req, title, strings.HasPrefix(rest, "/es")); code != 0 {
			res.StatusCode, res.StatusMessage = code, reason
			return res, ""
		}
	}
	var authz string
	if v := req.Header["Authorization"]; len(v) > 0 {
		authz = v[0]
	}
	ip, addr := remote(nc)
	var user string
	var stale bool
	tok, viaToken := m.subscriberToken(authz, u.RawQuery)
	ticket := readmitTicket(u.RawQuery)
	readmitted := ticket != "" && authz == "" && !viaToken
	var ended string // the session a ticket re-admits: free for another try if this one is refused
	if readmitted {
		user, ended, err = m.authenticateReadmit(ticket, title, ip, rtspProto(nc))
	} else if viaToken {
		user, err = m.authenticateToken(tok, title, ip)
	} else {
		user, stale, err = m.authenticate(ctx, string(req.Method), u, authz, ip, true)
	}
	if err != nil {
		return s.fail(nc, res, err, stale), ""
	}
	if err := m.checkRequestRate(user, store.ProtoRTSP, title); err != nil {
		m.readmits.forget(ended)
		return s.fail(nc, res, err, false), ""
	}
	g, err := m.admitTimed(ctx, admitRequest{User: user, Title: title, ClientIP: ip, Client: addr, Protocol: rtspProto(nc),
		Door: rtspDoor(isTLS(nc), u.Host), Readmitted: readmitted, Reuse: admitted[title], NeedsUDP: needsUDP})
	if err != nil {
		m.readmits.forget(ended) // a 453, or a 403 while the ended session's report is on its way: the viewer may try again
		if ctx.Err() != nil {
			countRequest(rtspProto(nc), ctx.Err())
			return nil, ""
		}
		if viaToken {
			err = m.tokenSubscriberErr(err, user, ip)
		}
		return s.fail(nc, res, err, false), ""
	}
	countRequest(rtspProto(nc), nil)
	res.StatusCode = base.StatusFound
	res.StatusMessage = "Moved Temporarily" // RFC 2326 section 7.1.1
	res.Header["Location"] = base.HeaderValue{g.rtspURL(isTLS(nc)) + "/s/" + g.Token + "/vod/" + title + rest}
	admitted[title] = g.Session.ID
	return res, g.Session.ID
}

// rtspDoor is the front door a viewer asked over RTSP (TLS: RTSPS), as
// the request URL's authority names it (the virtual IP or the name the
// viewer's box was given, not this manager's own address; host is the
// parsed URL's, unescaped), for the
// token's Claims.Door; "" when host is not fit for a Location header
// (token.ValidDoor).
func rtspDoor(tls bool, host string) string {
	u := url.URL{Scheme: "rtsp", Host: host} // escaped again: a zone's "%" is "%25" in a URL
	if tls {
		u.Scheme = "rtsps"
	}
	door := u.String()
	if !token.ValidDoor(door) {
		return ""
	}
	return door
}

// notTitleURL is the reason phrase of the front door's 404 for a URL that
// names no title: the player shows it (ffmpeg, GStreamer print the status
// line), so the viewer or the operator tells a wrong URL from a title the
// catalog lacks ("Not Found (no such title)"), as the HTTP front door's
// answers do.
const notTitleURL = "Not Found (not a title's URL: rtsp://HOST/vod/<title>)"

// fail answers a refused admission on connection nc: the RTSP status of
// err, with a Digest challenge (its nonce the connection's: IssueTo) for a
// 401.
func (s *rtspServer) fail(nc net.Conn, res *base.Response, err error, stale bool) *base.Response {
	m := s.m
	countRequest(rtspProto(nc), err)
	switch {
	case errors.Is(err, errUnauthorized):
		res.StatusCode = base.StatusUnauthorized
		nonce := m.nonces.IssueTo(m.now(), connKey(nc))
		if stale {
			// The client's nonce expired or its response was used: the
			// nonce of this second may be the one it used.
			nonce = m.nonces.IssueFresh(m.now())
		}
		res.Header["WWW-Authenticate"] = auth.Challenge(m.Realm, nonce, stale, true)
		var tr tokenRefused
		switch {
		case errors.As(err, &tr): // its reason in the Bearer challenge
			res.Header["WWW-Authenticate"] = append(base.HeaderValue{auth.BearerChallenge(m.Realm, tr.reason)}, res.Header["WWW-Authenticate"]...)
		case !errors.Is(err, errChallenge): // given and refused: told from the challenge a Digest login starts with
			res.StatusMessage = "Unauthorized (credentials refused)"
		}
	case errors.Is(err, errTokenTitle):
		res.StatusCode = base.StatusForbidden
		res.StatusMessage = "Forbidden (the token opens another title)"
	case errors.Is(err, errEndedByOperator):
		res.StatusCode = base.StatusForbidden
		res.StatusMessage = "Forbidden (sessions ended by the operator)"
	case errors.Is(err, errSuspended):
		res.StatusCode = base.StatusForbidden
		res.StatusMessage = "Forbidden (suspended by the operator)"
	case errors.Is(err, errForbidden):
		res.StatusCode = base.StatusForbidden
		res.StatusMessage = "Forbidden (title not in your packages)"
	case errors.Is(err, errUserLimit):
		res.StatusCode = base.StatusForbidden
		res.StatusMessage = userLimitReason(err)
	case errors.Is(err, errNoTitle):
		res.StatusCode = base.StatusNotFound
		res.StatusMessage = "Not Found (no such title)"
	case errors.Is(err, errNoNodeReporting):
		res.StatusCode = base.StatusServiceUnavailable
		res.StatusMessage = "Service Unavailable (no node is reporting to the manager)"
	case errors.Is(err, errNoNodeInService), errors.Is(err, errNodesOutOfTouch):
		res.StatusCode = base.StatusServiceUnavailable
		res.StatusMessage = "Service Unavailable (" + noNodeInServiceReason(err) + ")"
	case errors.Is(err, errNoDiskRoom):
		res.StatusCode = base.StatusNotEnoughBandwidth
		res.StatusMessage = "Not Enough Bandwidth (no node has disk room for the title)"
	case errors.Is(err, errOverEgress):
		res.StatusCode = base.StatusNotEnoughBandwidth
		res.StatusMessage = "Not Enough Bandwidth (the title's bitrate is more than any node can stream)"
	case errors.Is(err, errNoSource):
		res.StatusCode = base.StatusNotEnoughBandwidth
		res.StatusMessage = "Not Enough Bandwidth (no node holds the title and none can fetch it)"
	case errors.Is(err, errOriginBusy):
		res.StatusCode = base.StatusNotEnoughBandwidth
		res.StatusMessage = "Not Enough Bandwidth (no node that may serve you holds the title yet and every origin channel is busy)"
	case errors.Is(err, errNoBandwidth):
		res.StatusCode = base.StatusNotEnoughBandwidth
	case errors.Is(err, errOriginDown):
		res.StatusCode = base.StatusServiceUnavailable
		res.StatusMessage = "Service Unavailable (origin unavailable)"
	case errors.Is(err, errThrottled):
		res.StatusCode = base.StatusServiceUnavailable
		res.StatusMessage = "Service Unavailable (too many failed logins)"
	case errors.Is(err, errRateLimited):
		// RTSP has no 429: 503 with Retry-After (RFC 2326 section 7.1.1,
		// 12.27), as for too many failed logins.
		res.StatusCode = base.StatusServiceUnavailable
		res.StatusMessage = "Service Unavailable (too many requests)"
	case errors.Is(err, errNoCatalog):
		res.StatusCode = base.StatusServiceUnavailable
		res.StatusMessage = "Service Unavailable (no catalog yet: the origin has not been reached)"
	case errors.Is(err, errStoreDown), errors.Is(err, errStoreTimeout):
		res.StatusCode = base.StatusServiceUnavailable
		res.StatusMessage = "Service Unavailable (the cluster's session store is unavailable)"
	case errors.Is(err, errBOSSDown):
		res.StatusCode = base.StatusServiceUnavailable
		res.StatusMessage = "Service Unavailable (the subscriber database does not answer)"
	default:
		res.StatusCode = base.StatusServiceUnavailable
	}
	if ra := m.refusalRetryAfter(err); ra != "" && !errors.Is(err, errUserLimit) { // a 403 takes none
		res.Header["Retry-After"] = base.HeaderValue{ra}
	}
	return res
}

// remote returns the client's IP and ip:port.
func remote(nc net.Conn) (ip, addr string) {
	addr = nc.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h, addr
	}
	return addr, addr
}

// rtspProto is the protocol of nc's sessions and front-door answers:
// store.ProtoRTSPS through the RTSPS listener, store.ProtoRTSP otherwise.
func rtspProto(nc net.Conn) string {
	if isTLS(nc) {
		return store.ProtoRTSPS
	}
	return store.ProtoRTSP
}

// tlsHandshakeTimeout bounds an RTSPS client's TLS handshake: a listener
// facing the Internet does not keep a connection that never completes one
// for the whole idle timeout. A variable for tests.
var tlsHandshakeTimeout = 10 * time.Second

// handshake completes the TLS handshake of an RTSPS connection within
// tlsHandshakeTimeout; false when it failed (the connection is to be
// closed). Plain connections pass.
func handshake(nc net.Conn) bool {
	tc, ok := nc.(*tls.Conn)
	if !ok {
		return true
	}
	tc.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	if err := tc.Handshake(); err != nil {
		return false
	}
	tc.SetDeadline(time.Time{})
	return true
}

// isTLS reports whether nc came through the RTSPS listener.
func isTLS(nc net.Conn) bool {
	_, ok := nc.(*tls.Conn)
	return ok
}

// connKeySeed keys connKey, one per process.
var connKeySeed = maphash.MakeSeed()

// connKey is a key of nc for its Digest nonces (auth.Nonces.IssueTo): a
// hash of its two addresses, the same for all its challenges.
func connKey(nc net.Conn) uint64 {
	return maphash.String(connKeySeed, nc.RemoteAddr().String()+" "+nc.LocalAddr().String())
}

// statusWithReason is code's status text with why the request could not be
// read, as the other refusals of the front door say why ("Bad Request
// (request head too large)"): the reason clipped to 120 bytes, anything but
// printable ASCII (it may quote the client's request line) as '?'.
func statusWithReason(code base.StatusCode, reason string) string {
	text := base.StatusMessages[code]
	if text == "" {
		text = "Error"
	}
	if reason == "" {
		return text
	}
	r := []byte(reason)
	if len(r) > 120 {
		r = r[:120]
	}
	for i, c := range r {
		if c < 0x20 || c > 0x7e {
			r[i] = '?'
		}
	}
	return text + " (" + string(r) + ")"
}
