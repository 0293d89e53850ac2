package vodnode

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/proto/connlimit"
	"vodcluster/proto/httpcors"
	"vodcluster/proto/monotime"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/vodnode/store"
)

// httpServer is the node's HTTP delivery: progressive MPEG-TS with byte
// ranges and HLS (RFC 8216), under the same admission token rules as RTSP.
type httpServer struct {
	n   *Node
	ln  net.Listener
	srv *http.Server
}

func (h *httpServer) start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// Each connection an httpConn (below TLS), which takes back from its
	// session's count what its socket never delivered.
	if h.n.HTTPTLS != nil {
		ln = tls.NewListener(httpConnListener{h.n.connLimit.Wrap(ln, "http", connlimit.Close), h.n.httpSendBuffer}, h.n.HTTPTLS) // a refusal's bytes would have to be TLS
	} else {
		ln = httpConnListener{h.n.connLimit.Wrap(ln, "http", connlimit.HTTP), h.n.httpSendBuffer}
	}
	h.ln = ln
	h.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return h.n.ctx }, ConnContext: withHTTPConn}
	h.n.wg.Add(1)
	go func() {
		defer h.n.wg.Done()
		h.srv.Serve(ln)
	}()
	return nil
}

func (h *httpServer) close()       { h.srv.Close() }
func (h *httpServer) addr() string { return h.ln.Addr().String() }

// httpKind is what an HTTP URL asks for.
type httpKind int

const (
	httpTS       httpKind = iota + 1 // the whole title, progressive, byte ranges
	httpPlaylist                     // HLS media playlist
	httpSegment                      // one HLS segment
)

// Errors of parseHTTPTarget.
var (
	errNoHTTPPath = errors.New("no such resource: want /s/<token>/vod/<title>.ts, /s/<token>/vod/<title>/index.m3u8 or /vod/<title>.ts?token=<token>")
	errSegName    = errors.New("no such segment: want seg-<n>.ts, n a segment's number from 0 in decimal without leading zeros (the playlist lists them)")
)

type httpTarget struct {
	Token, Title string
	Kind         httpKind
	Seg          int
}

// parseHTTPTarget parses an HTTP delivery path:
//
//	/s/<token>/vod/<title>.ts                (or /vod/<title>.ts?token=<token>)
//	/s/<token>/vod/<title>/index.m3u8
//	/s/<token>/vod/<title>/seg-<n>.ts
//
// Errors: errNoHTTPPath, errSegName (404), errNoToken (401).
func parseHTTPTarget(path, rawQuery string) (httpTarget, error) {
	var tg httpTarget
	rest, hasTok := strings.CutPrefix(path, "/s/")
	if hasTok {
		var ok bool
		tg.Token, rest, ok = strings.Cut(rest, "/")
		if !ok || tg.Token == "" {
			return tg, errNoHTTPPath
		}
		rest = "/" + rest
	} else if q, err := urlQuery(rawQuery); err == nil {
		tg.Token = q
	}
	rest, ok := strings.CutPrefix(rest, "/vod/")
	if !ok {
		return tg, errNoHTTPPath
	}
	if title, file, ok := strings.Cut(rest, "/"); ok {
		tg.Title = title
		switch {
		case file == "index.m3u8":
			tg.Kind = httpPlaylist
		case strings.HasPrefix(file, "seg-") && strings.HasSuffix(file, ".ts"):
			num := strings.TrimSuffix(strings.TrimPrefix(file, "seg-"), ".ts")
			n, err := strconv.Atoi(num)
			// the playlist's names only: seg-01.ts or seg-+1.ts would be
			// a second name for seg-1.ts (two URLs, two cache entries)
			if err != nil || n < 0 || n > 1<<24 || strconv.Itoa(n) != num {
				return tg, errSegName
			}
			tg.Kind, tg.Seg = httpSegment, n
		default:
			return tg, errNoHTTPPath
		}
	} else if title, ok := strings.CutSuffix(rest, ".ts"); ok {
		tg.Title, tg.Kind = title, httpTS
	} else {
		return tg, errNoHTTPPath
	}
	if !store.ValidID(tg.Title) {
		return tg, errNoHTTPPath
	}
	if tg.Token == "" {
		return tg, errNoToken
	}
	return tg, nil
}

func urlQuery(raw string) (string, error) {
	for _, kv := range strings.Split(raw, "&") {
		if v, ok := strings.CutPrefix(kv, "token="); ok {
			return v, nil
		}
	}
	return "", errNoToken
}

// httpSession is one viewer's HTTP playback: the requests made with one
// admission token (a progressive download and its range requests, or an
// HLS playlist and its segments). It ends PauseTimeout after its last
// request.
type httpSession struct {
	sid, title string
	meta       store.Meta
	expires    time.Time // the token's expiry
	// cur is the copy of the title the session holds (t), set once set
	// up; a new one replaces it after its fill failed (refill), the old
	// ones kept held in retired (under Node.mu) until the session ends.
	cur      atomic.Pointer[store.Title]
	retired  []*store.Title
	refillMu sync.Mutex // one refill at a time
	pacing   pacing     // paces the bytes at a multiple of the title's bitrate (httppace.go)
	// aheadSeq numbers the session's ranges that ask the origin for bytes
	// far ahead of the fill, in the order they first ask (titleReader.seq).
	aheadSeq atomic.Int64

	ready chan struct{} // closed once set up (or refused: err)
	err   *rtspError
	// gone is done once the session ended: its requests in progress (a
	// progressive download, a segment being paced) are cut then.
	gone     context.Context
	goneStop context.CancelFunc

	lastSeen atomic.Int64 // monotime.Now of the last request's start or end
	// lastActive is when the viewer last took bytes or ended a request,
	// monotime.Now: lastSeen, but for a request cut by a stalled write (a
	// paused player) the end of its last write that went through. The
	// session's end when it ended idle (the session record's).
	lastActive atomic.Int64
	active     atomic.Int32
	requests   atomic.Int64 // the requests served (counted as each starts): a stalled one asked last opens a pause
	hlsEvent   atomic.Bool  // an EVENT playlist was served: its reloads stay EVENT
	hlsAsked   atomic.Int64 // 1 + the highest HLS segment asked for; 0: none
	hlsLast    atomic.Int64 // 1 + the last HLS segment asked for (a seek's test); 0: none
	hlsShown   atomic.Int64 // segments the last EVENT playlist listed (reloads never list fewer)
	// bytes is the title's bytes the viewer took: those counted as sent,
	// less what its connections' sockets never delivered (httpConn).
	bytes   atomic.Int64
	readTo  atomic.Int64 // offset a progressive read of the title last reached
	watched atomic.Bool  // watchFill was called
	connsMu sync.Mutex
	conns   map[*httpConn]struct{} // the connections whose bytes it was counted last (httpConn.countSent)
	ended   bool                   // guarded by Node.mu
	// startedAt is when STARTED was reported (set once set up, before
	// ready is closed).
	startedAt time.Time
	// pause is how long the viewer was paused (the ENDED's paused_ms):
	// from the last bytes a request whose write stalled took (a player
	// that stopped reading), when it was the viewer's last request and
	// its only one in progress, to the viewer's next request.
	pause pauseClock
}

// httpPace is how much faster than its bitrate an HTTP viewer (all the
// requests of one token together: ranges, playlist segments, from any
// number of connections) is served, after a burst of httpBurst seconds of
// media (players fill a buffer before they start). A downloader that reads
// as fast as it is sent takes httpPace times the reservation: the margin
// lets a player refill its buffer after a hiccup, and is what egress_bps
// must leave room for on the link (deploy/README.md).
const (
	httpPace  = 1.2
	httpBurst = 5
)

// maxHTTPInFlight is how many requests of one viewer (one token) a node
// serves at once; more are 429 with Retry-After. Players keep one to a
// few open (a range being read, the next segment, the playlist).
const maxHTTPInFlight = 16

func httpError(w http.ResponseWriter, e *rtspError) {
	code := int(e.code)
	switch e.code {
	case base.StatusNotEnoughBandwidth:
		code = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", retryAfter)
	case base.StatusServiceUnavailable, base.StatusUnauthorized: // Retry-After where a retry may succeed (unavailable); the challenge
		for k, v := range e.header {
			w.Header()[k] = v
		}
	case base.StatusInvalidRange:
		code = http.StatusRequestedRangeNotSatisfiable
	}
	if code < 400 || code > 599 || http.StatusText(code) == "" {
		code = http.StatusBadRequest
	}
	http.Error(w, e.reason, code)
}

func (h *httpServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	httpcors.Header(w.Header()) // browser players (hls.js) from other origins
	if httpcors.Options(w, r) {
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", httpcors.Methods)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	tg, err := parseHTTPTarget(r.URL.EscapedPath(), r.URL.RawQuery)
	switch {
	case errors.Is(err, errNoToken):
		httpError(w, unauthorized(errNoToken.Error()))
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	var client netip.Addr
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		client = ap.Addr().Unmap()
	}
	hs, rerr := h.n.httpSession(r.Context(), tg, client)
	if rerr != nil {
		httpError(w, rerr)
		return
	}
	if hs.active.Add(1) > maxHTTPInFlight {
		hs.active.Add(-1)
		w.Header().Set("Retry-After", "1")
		http.Error(w, fmt.Sprintf("too many requests at once for one viewer (%d)", maxHTTPInFlight), http.StatusTooManyRequests)
		return
	}
	h.n.mu.Lock()
	ended := hs.ended // ended idle between the lookup and the count above
	h.n.mu.Unlock()
	if ended {
		hs.active.Add(-1)
		httpError(w, unauthorized(reasonUsed))
		return
	}
	hs.pause.resume(time.Now()) // asking again: not paused
	seq := hs.requests.Add(1)
	aw := &activityWriter{ResponseWriter: w}
	w = aw
	defer func() {
		end := time.Now()
		hs.lastSeen.Store(monotime.Of(end))
		if aw.failed && !aw.lastOK.IsZero() {
			end = aw.lastOK // a stalled player: not reading since
			if hs.active.Load() == 1 && hs.requests.Load() == seq {
				// Its only request and its last: paused from its last
				// bytes taken to its next request. A request asked
				// after it says the player left this one (a seek), not
				// that it stopped taking bytes; its last good write
				// cannot tell when the player left it (the sockets'
				// buffers take seconds of paced bytes after).
				hs.pause.pause(end)
			}
		}
		hs.lastActive.Store(monotime.Of(end))
		hs.active.Add(-1)
		if hs.bytes.Load() == 0 && hs.watched.CompareAndSwap(false, true) {
			h.n.watchFill(hs) // a viewer that got nothing may leave now
		}
	}()
	if e := h.n.refill(r.Context(), hs); e != nil {
		httpError(w, e)
		return
	}
	// A session ended meanwhile (the manager's order) cuts this request:
	// its reservation is gone.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(hs.gone, cancel)()
	r = r.WithContext(ctx)
	switch tg.Kind {
	case httpTS:
		w.Header().Set("Content-Type", "video/mp2t")
		rd := &titleReader{hs: hs, ctx: r.Context(), conn: httpConnOf(r.Context()), n: h.n, rc: http.NewResponseController(w), stall: h.n.SessionTimeout,
			sendfile: h.n.HTTPTLS == nil}
		if r.Method == http.MethodGet {
			aw.held = heldHeader{on: true, due: time.Now().Add(requestTimeout)}
		}
		// The title held's meta: the bytes served (hs.meta is the same
		// title's, looked up before it was held).
		serveContent(w, r, tg.Title+".ts", hs.meta.Size, titleETag(hs.t().Meta()), rd) // an origin read rd left open closes with ctx (aheadRead)
		h.n.answered(aw, hs, rd)
	case httpPlaylist:
		h.n.servePlaylist(w, r, hs)
	case httpSegment:
		h.n.serveSegment(w, r, hs, tg.Seg)
	}
}

// httpSession returns the HTTP session of tg's token: the live one
// (checked as an in-session request: signature, same admission session,
// same title) or a new one (full verification, the one-token-one-viewer
// claim, capacity, the title held from the store). Requests of a token
// whose session is being set up by another request wait for it.
func (n *Node) httpSession(ctx context.Context, tg httpTarget, client netip.Addr) (*httpSession, *rtspError) {
	c, err := n.signer.Parse(tg.Token)
	if err != nil {
		return nil, unauthorized("invalid admission token")
	}
	if ip := client.String(); client.IsValid() && c.Client != "" && c.Client != ip {
		// The token is the HTTP viewer's only secret: a URL copied
		// elsewhere does not play, even while its session lives.
		return nil, unauthorized(fmt.Sprintf("token for client %s, request from %s", c.Client, ip))
	}
	n.mu.Lock()
	hs := n.httpSessions[c.Session]
	n.mu.Unlock()
	if hs != nil {
		return hs.join(ctx, tg.Title)
	}
	claims, rerr := n.verifyStart(target{Token: tg.Token, Title: tg.Title}, client, "http")
	if rerr != nil {
		return nil, rerr
	}
	hs = &httpSession{sid: claims.Session, title: tg.Title, ready: make(chan struct{})}
	hs.gone, hs.goneStop = context.WithCancel(context.Background())
	if claims.ExpiresAt != nil {
		hs.expires = claims.ExpiresAt.Time
	}
	hs.lastSeen.Store(monotime.Now())
	hs.lastActive.Store(hs.lastSeen.Load())
	n.mu.Lock()
	switch other := n.live[hs.sid].(type) {
	case *httpSession: // another request of the viewer got here first
		n.mu.Unlock()
		return other.join(ctx, tg.Title)
	case nil:
		if _, used := n.used[hs.sid]; used {
			n.mu.Unlock()
			return nil, unauthorized(reasonUsed)
		}
		n.live[hs.sid] = hs
		n.httpSessions[hs.sid] = hs
		n.usedDirty = true // saved as spent (saveUsedTokens), in case of a crash
	default:
		n.mu.Unlock()
		return nil, unauthorized(reasonLive)
	}
	n.mu.Unlock()
	defer close(hs.ready)
	if hs.err = n.startHTTPSession(ctx, hs); hs.err != nil {
		return nil, hs.err
	}
	return hs, nil
}

// join returns hs for a further request of its viewer once hs is set up;
// the error its setup failed with, or 401 for another title.
func (hs *httpSession) join(ctx context.Context, title string) (*httpSession, *rtspError) {
	select {
	case <-hs.ready:
	case <-ctx.Done():
		return nil, unavailable(nil, "request cancelled")
	}
	if hs.err != nil {
		return nil, hs.err
	}
	if hs.title != title {
		return nil, unauthorized(fmt.Sprintf("token for title %q", hs.title))
	}
	hs.lastSeen.Store(monotime.Now())
	return hs, nil
}

// startHTTPSession sets up hs, which holds its admission session's claim:
// capacity, the title, the pace; STARTED is reported. A refusal ends the
// admission session (refuseStart).
func (n *Node) startHTTPSession(ctx context.Context, hs *httpSession) *rtspError {
	var reserved bool
	fail := func(e *rtspError) *rtspError {
		if reserved {
			n.unreserve(hs.meta.Bitrate)
		}
		n.refuseStart(hs.sid, hs.title, hs.expires, hs, e)
		return e
	}
	if n.draining.Load() {
		return fail(unavailable(nil, "node draining"))
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	meta, serr := n.store.Lookup(ctx, hs.title)
	if serr != nil {
		return fail(storeError(serr))
	}
	hs.meta = meta
	if rerr := n.reserve(meta.Bitrate); rerr != nil {
		return fail(rerr)
	}
	reserved = true
	t, serr := n.store.Acquire(ctx, hs.title)
	if serr != nil {
		return fail(storeError(serr))
	}
	if e := n.adoptHeldMeta(t, &hs.meta); e != nil {
		n.store.Release(t)
		return fail(e)
	}
	hs.pacing.start(hs.meta.Bitrate, n.httpBursts)
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		n.store.Release(t)
		return fail(unavailable(nil, "node shutting down"))
	}
	if _, used := n.used[hs.sid]; used { // the manager ended it meanwhile (refuseTokens)
		e := n.spentLocked(hs.sid)
		n.mu.Unlock()
		n.store.Release(t)
		return fail(e)
	}
	hs.cur.Store(t)
	n.mu.Unlock()
	n.store.Unexpect(hs.sid) // it arrived: its title is held for it (hs.t())
	filled := !t.View().Complete
	n.log.Info("http session started", "sid", hs.sid, "title", hs.title, "filling", filled)
	hs.startedAt = time.Now()
	if n.mgr != nil {
		n.mgr.report(&pb.SessionEvent{NodeId: n.ID, SessionId: hs.sid, TitleId: hs.title,
			Kind: pb.SessionEvent_KIND_STARTED, Filled: filled, AtUnixMs: hs.startedAt.UnixMilli()})
	}
	return nil
}

// endHTTPSession ends hs once, like endSession for RTSP; a session still
// being set up is left to its setup.
func (n *Node) endHTTPSession(hs *httpSession, reason string) {
	n.endHTTPSessionIf(hs, reason, nil)
}

// endHTTPSessionIf ends hs as endHTTPSession does when cond (nil: always)
// holds under Node.mu; a request counts itself in hs.active before it
// checks hs.ended under the same lock, so an idle end and a new request
// cannot both go ahead.
func (n *Node) endHTTPSessionIf(hs *httpSession, reason string, cond func() bool) {
	n.endHTTPSessionAt(hs, reason, time.Time{}, cond)
}

// endHTTPSessionAt is endHTTPSessionIf reporting the end at at when it is
// not zero (fillFailedEmpty: the session's start).
func (n *Node) endHTTPSessionAt(hs *httpSession, reason string, at time.Time, cond func() bool) {
	n.mu.Lock()
	if hs.ended || hs.t() == nil || (cond != nil && !cond()) {
		n.mu.Unlock()
		return
	}
	hs.ended = true
	// No request in progress: the viewer left at its last request's end.
	idle := hs.active.Load() == 0
	hs.goneStop() // its requests in progress stop
	delete(n.httpSessions, hs.sid)
	n.unreserveLocked(hs.meta.Bitrate)
	n.releaseLocked(hs.sid, hs, hs.expires)
	retired := hs.retired
	hs.retired = nil
	n.mu.Unlock()
	n.store.Release(hs.t())
	for _, t := range retired {
		n.store.Release(t)
	}
	// What its connections never delivered is not counted: taken back
	// once it was quiet as long as a session may be (an idle one ends
	// after PauseTimeout).
	hs.takeBackUnacked(idle && monotime.Since(hs.lastActive.Load()) >= min(n.SessionTimeout, n.PauseTimeout))
	n.log.Info("http session ended", "sid", hs.sid, "title", hs.title, "reason", reason, "bytes", hs.bytes.Load())
	if n.mgr != nil {
		// Ended idle (timed out, by the manager's order or at shutdown):
		// the end of its last request, not the time of the end, which
		// the session record would count as watched.
		if at.IsZero() {
			at = time.Now()
			if idle {
				at = monotime.Wall(hs.lastActive.Load())
			}
		}
		n.mgr.report(&pb.SessionEvent{NodeId: n.ID, SessionId: hs.sid, TitleId: hs.title, Kind: pb.SessionEvent_KIND_ENDED,
			Reason: reason, BytesSent: hs.bytes.Load(), AtUnixMs: at.UnixMilli(), PausedMs: hs.pause.until(at).Milliseconds()})
	}
}

// activityWriter records when the viewer last took bytes: the end of the
// last write that went through, and whether one failed (its write
// deadline passed: the player stopped reading). A progressive download's
// status line is held until its first bytes (held).
type activityWriter struct {
	http.ResponseWriter
	held   heldHeader
	lastOK time.Time
	failed bool
	// fileBytes: bytes handed from a title's file to the connection's
	// ReadFrom (sendfile(2) on a TCP connection; ReadFrom, httpsend.go).
	fileBytes int64
}

// WriteHeader holds a 200 or 206 while a.held is on; else writes code.
func (a *activityWriter) WriteHeader(code int) {
	if a.held.on && a.held.code == 0 && (code == http.StatusOK || code == http.StatusPartialContent) {
		a.held.code = code
		return
	}
	a.ResponseWriter.WriteHeader(code)
}

// release writes the status line held, if any, and holds no more.
func (a *activityWriter) release() {
	code := a.held.code
	a.held = heldHeader{}
	if code != 0 {
		a.ResponseWriter.WriteHeader(code)
	}
}

func (a *activityWriter) Write(p []byte) (int, error) {
	a.release()
	n, err := a.ResponseWriter.Write(p)
	if err != nil {
		a.failed = true
	} else {
		a.lastOK = time.Now()
	}
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (a *activityWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }
