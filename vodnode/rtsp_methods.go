package vodnode

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/bluenviron/gortsplib/v4/pkg/headers"

	"vodcluster/proto/rtspwire"
	"vodcluster/vodnode/deliver"
	"vodcluster/vodnode/store"
)

// requestTimeout bounds what one request may wait for (catalog lookups).
const requestTimeout = 10 * time.Second

func sessionHeader(req *base.Request) string {
	v, ok := req.Header["Session"]
	if !ok || len(v) == 0 {
		return ""
	}
	var h headers.Session
	if err := h.Unmarshal(v); err != nil {
		return strings.TrimSpace(v[0])
	}
	return h.Session
}

func (c *rtspConn) sessionValue(s *session) base.HeaderValue {
	t := uint(c.n.SessionTimeout / time.Second)
	return headers.Session{Session: s.id, Timeout: &t}.Marshal()
}

// options answers OPTIONS; it keeps alive the session it names, or,
// without a Session header ("OPTIONS *", as some set-top boxes send), the
// sessions set up over the connection. A Session header that names no
// live session (ended, timed out, or never set up here) is 454 (RFC 2326
// §11.3.5), so that a set-top box whose keepalive is OPTIONS learns its
// session is gone and goes back to the front door.
func (c *rtspConn) options(req *base.Request) *base.Response {
	res := &base.Response{StatusCode: base.StatusOK, Header: base.Header{"Public": base.HeaderValue{publicMethods}}}
	if id := sessionHeader(req); id != "" {
		s := c.n.lookupSession(id)
		if s == nil {
			return &base.Response{StatusCode: base.StatusSessionNotFound, Header: base.Header{"Public": base.HeaderValue{publicMethods}}}
		}
		s.touch(time.Now())
		res.Header["Session"] = c.sessionValue(s)
	} else {
		c.touchAll()
	}
	return res
}

// touchAll keeps alive every session set up over the connection.
func (c *rtspConn) touchAll() {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.sessions {
		s.touch(now)
	}
}

// storeError maps a store error to an RTSP status.
func storeError(err error) *rtspError {
	switch {
	case errors.Is(err, store.ErrUnknownTitle), errors.Is(err, store.ErrBadID):
		return rtspErr(base.StatusNotFound, "unknown title")
	case errors.Is(err, store.ErrNoSpace):
		return rtspErr(base.StatusNotEnoughBandwidth, "no disk space for the title on this node")
	case errors.Is(err, store.ErrOrigin):
		return unavailable(err, "origin unavailable")
	case errors.Is(err, store.ErrDisk):
		// The node's log has the file and the cause; the viewer is told
		// to come back (the manager sends it elsewhere meanwhile: the
		// node reports the fault).
		return unavailable(nil, "the node's disk cannot take the title's fill now")
	}
	return rtspErr(base.StatusInternalServerError, "%v", err)
}

func (c *rtspConn) describe(req *base.Request) (*base.Response, *rtspError) {
	tg, err := requestTarget(req.URL)
	if err != nil {
		return nil, err
	}
	if !rtspwire.AcceptsSDP(req.Header["Accept"]) {
		// before the token is looked at: the viewer keeps its admission
		return nil, rtspErr(base.StatusNotAcceptable, "the description is application/sdp, which Accept does not admit")
	}
	claims, err := c.n.verifyStart(tg, c.remote, c.proto())
	if err != nil {
		return nil, err
	}
	if err := c.n.liveElsewhere(claims.Session, c); err != nil {
		return nil, err
	}
	// a refusal from here on ends the admission session
	fail := func(e *rtspError) (*base.Response, *rtspError) {
		var exp time.Time
		if claims.ExpiresAt != nil {
			exp = claims.ExpiresAt.Time
		}
		c.n.refuseStart(claims.Session, tg.Title, exp, nil, e)
		return nil, e
	}
	if c.n.draining.Load() {
		return fail(unavailable(nil, "node draining"))
	}
	ctx, cancel := context.WithTimeout(c.n.ctx, requestTimeout)
	defer cancel()
	meta, serr := c.n.store.Lookup(ctx, tg.Title)
	if serr != nil {
		return fail(storeError(serr))
	}
	var body []byte
	if tg.ES {
		var rerr *rtspError
		if body, rerr = c.describeES(ctx, tg, meta); rerr != nil {
			return fail(rerr)
		}
	} else {
		if body, serr = describeSDP(tg.Title, c.local, meta.Duration); serr != nil {
			return fail(rtspErr(base.StatusInternalServerError, "%v", serr))
		}
	}
	var exp time.Time
	if claims.ExpiresAt != nil {
		exp = claims.ExpiresAt.Time
	}
	c.noteDescribed(claims.Session, tg.Title, exp)
	cb := req.URL.String()
	if !strings.HasSuffix(cb, "/") {
		cb += "/"
	}
	return &base.Response{
		StatusCode: base.StatusOK,
		Header: base.Header{
			"Content-Base": base.HeaderValue{cb},
			"Content-Type": base.HeaderValue{"application/sdp"},
		},
		Body: body,
	}, nil
}

func (c *rtspConn) pause(req *base.Request) (*base.Response, *rtspError) {
	s, _, err := c.sessionOf(req)
	if err != nil {
		return nil, err
	}
	s.ctl.Lock()
	defer s.ctl.Unlock()
	if s.player != nil {
		s.player.Pause()
	}
	s.paused.Store(true)
	c.n.mu.Lock()
	started := s.started
	c.n.mu.Unlock()
	if started {
		// Paused after its start (a PAUSE before the first PLAY is no
		// part of what it played): counted until the next PLAY.
		s.pause.pause(time.Now())
	}
	return &base.Response{StatusCode: base.StatusOK, Header: base.Header{"Session": c.sessionValue(s)}}, nil
}

// teardown answers TEARDOWN: the session ends. The answer, as every
// answer (rtspConn.write), waits for the writes still to come of the
// connection's sessions the node aborted (awaitAborts): one it ended on
// the manager's order just before (the TEARDOWN then answered 454, or
// 200 when it ended the session first) may still be writing its RTCP
// BYE, or a packet of its play, which must not follow the answer (the
// client is done with the session then).
func (c *rtspConn) teardown(req *base.Request) (*base.Response, *rtspError) {
	s, _, err := c.sessionOf(req)
	if err == nil {
		c.n.endSession(s, "teardown", nil)
	}
	if err != nil {
		return nil, err
	}
	return &base.Response{StatusCode: base.StatusOK, Header: base.Header{"Session": c.sessionValue(s)}}, nil
}

// parameter answers GET_PARAMETER and SET_PARAMETER: keepalives (200;
// a SET_PARAMETER naming parameters is 451, setParameterErr, at any URL,
// and keeps its session alive all the same).
// A GET_PARAMETER of a session whose body names parameters (one per line,
// RFC 2326 §10.8) gets those it knows in a text/parameters body:
// "position" (npt of the stream, seconds, as set-top boxes ask for their
// progress bar) and "duration" (seconds); others are left out, not 451,
// since boxes use such requests as keepalives. Inside a session the token is checked like
// any in-session request; a URL that carries no token at all ("*", the
// server's root, as set-top boxes send) is a keepalive of the session its
// Session header names (as OPTIONS is), 454 when that session is not
// live. Without a Session header they keep alive the sessions set up over
// the connection.
func (c *rtspConn) parameter(req *base.Request) (*base.Response, *rtspError) {
	id := sessionHeader(req)
	if id == "" {
		c.touchAll()
		if err := setParameterErr(req); err != nil {
			return nil, err
		}
		return &base.Response{StatusCode: base.StatusOK}, nil
	}
	if _, terr := requestTarget(req.URL); terr != nil {
		s := c.n.lookupSession(id)
		if s == nil {
			return nil, rtspErr(base.StatusSessionNotFound, "session %s not found", id)
		}
		s.touch(time.Now()) // a keepalive, answered 451 or not
		if err := setParameterErr(req); err != nil {
			return nil, err
		}
		return c.parameters(req, s), nil
	}
	s, _, err := c.sessionOf(req)
	if err != nil {
		return nil, err
	}
	if err := setParameterErr(req); err != nil {
		return nil, err
	}
	return c.parameters(req, s), nil
}

// setParameterErr returns 451 Parameter Not Understood (RFC 2326 §10.9,
// §11.3.8) for a SET_PARAMETER whose body names a parameter: the node
// sets none. An empty body, or one of blank lines only (the keepalive
// some set-top boxes send), is nil: answered 200.
func setParameterErr(req *base.Request) *rtspError {
	if req.Method != base.SetParameter || strings.TrimSpace(string(req.Body)) == "" {
		return nil
	}
	return rtspErr(base.StatusParameterNotUnderstood, "parameter not understood: the node sets no parameter")
}

// parameters answers a GET_PARAMETER of s with the parameters it knows
// among those its body names (see parameter), or an empty 200.
func (c *rtspConn) parameters(req *base.Request, s *session) *base.Response {
	res := &base.Response{StatusCode: base.StatusOK, Header: base.Header{"Session": c.sessionValue(s)}}
	if req.Method != base.GetParameter || len(req.Body) == 0 {
		return res
	}
	var b strings.Builder
	for _, line := range strings.Split(string(req.Body), "\n") {
		switch name := strings.ToLower(strings.TrimSpace(line)); name {
		case "position":
			s.ctl.Lock()
			p, ok := s.player.(interface{ Position() float64 }) // MP2T and elementary streams
			s.ctl.Unlock()
			if ok {
				fmt.Fprintf(&b, "position: %s\r\n", formatNPT(p.Position()))
			}
		case "duration":
			if d := s.duration(); d > 0 {
				fmt.Fprintf(&b, "duration: %s\r\n", formatNPT(d))
			}
		}
	}
	if b.Len() > 0 {
		res.Header["Content-Type"] = base.HeaderValue{"text/parameters"}
		res.Body = []byte(b.String())
	}
	return res
}

// nptRange is the grammar of an npt Range (RFC 2326 §3.6; RFC 7826
// §4.4.2): "now" or npt-sec (seconds, at most 9 digits: 31 years) or
// npt-hhmmss for each end, the start or the end left out, and parameters
// after ';' (a "time=" the node ignores).
var nptRange = regexp.MustCompile(`^npt\s*=\s*(now|\d{1,9}(\.\d*)?|\d{1,6}:\d{1,2}:\d{1,2}(\.\d*)?)?\s*-\s*(now|\d{1,9}(\.\d*)?|\d{1,6}:\d{1,2}:\d{1,2}(\.\d*)?)?\s*(;.*)?$`)

// ffmpegBeforeStart is how ffmpeg (libavformat's rtsp_read_play) writes a
// seek to before the stream's first timestamp, as its `-ss 0` gives on an
// elementary-stream play whose first timestamp is past 0: seconds and
// milliseconds each printed signed, "npt=0.-151-" for -0.151 s, and a
// whole negative second as "npt=-1.000-" (-ss -0.849 on a stream starting
// at 0.151 s), neither npt grammar. It is read as a play from the start of
// the title, not refused with 457, which left ffmpeg waiting for a play
// that never came.
var ffmpegBeforeStart = regexp.MustCompile(`^npt=(-?\d{1,9}\.-\d{1,3}|-\d{1,9}\.0{3})-$`)

// errRangeFormat is a Range in a format the node does not play from (the
// absolute clock= format, or an unknown one): 501 (RFC 2326 §12.29).
var errRangeFormat = errors.New("range format not supported: use npt=, smpte=, smpte-25= or smpte-30-drop=")

// parseRange returns the start and end of an npt or smpte (smpte-25=,
// smpte-30-drop=: frames count at the type's rate, smpteSeconds) Range header value
// in seconds: start -1 for "now" or a range without a start ("npt=-20"),
// end -1 when open. An end before the start is an error unless reverse
// (a negative Scale plays from the start down towards the end). Errors:
// errRangeFormat for a format other than those, or a malformed range.
func parseRange(v base.HeaderValue, reverse bool) (start, end float64, err error) {
	fps := 30000.0 / 1001 // smpte= is SMPTE 30 drop (RFC 2326 §3.5)
	if len(v) == 0 {
		return -1, -1, nil
	}
	raw := strings.TrimSpace(v[0])
	if raw == "" {
		return 0, 0, errors.New("empty range")
	}
	lower := strings.ToLower(raw)
	if nptRange.MatchString(lower) {
		// Spaces around "=" and "-" (npt = 3 -): read without them (the
		// checks below take "npt=" whole; it was 501 "use npt=").
		rng, params, hasParams := strings.Cut(raw, ";")
		raw = strings.Join(strings.Fields(strings.ToLower(rng)), "") // "NPT=" too
		if hasParams {
			raw += ";" + params
		}
		lower = strings.ToLower(raw)
	}
	if ffmpegBeforeStart.MatchString(lower) {
		return 0, -1, nil
	}
	if strings.HasPrefix(lower, "npt=") && !nptRange.MatchString(lower) {
		// What Go's float parser would take besides the RFC's npt-time
		// ("inf", "nan", exponents) or a time past any title, which
		// overflowed into "now".
		return 0, 0, errors.New("malformed")
	}
	switch {
	case strings.HasPrefix(lower, "npt=now"):
		return -1, -1, nil
	case strings.HasPrefix(lower, "npt=-"):
		// RFC 2326 §3.6: "-" npt-time, a range without its start.
		var h headers.Range
		if err := h.Unmarshal(base.HeaderValue{"npt=0" + raw[len("npt="):]}); err != nil {
			return 0, 0, err
		}
		r, ok := h.Value.(*headers.RangeNPT)
		if !ok || r.End == nil {
			return 0, 0, errors.New("malformed")
		}
		return -1, r.End.Seconds(), nil
	case strings.HasPrefix(lower, "smpte-25="):
		fps = 25
		raw = "smpte=" + raw[strings.IndexByte(raw, '=')+1:]
	case strings.HasPrefix(lower, "smpte-30-drop="):
		raw = "smpte=" + raw[strings.IndexByte(raw, '=')+1:]
	case strings.HasPrefix(lower, "npt="), strings.HasPrefix(lower, "smpte="):
	default:
		return 0, 0, errRangeFormat
	}
	var h headers.Range
	if err := h.Unmarshal(base.HeaderValue{raw}); err != nil {
		return 0, 0, err
	}
	switch r := h.Value.(type) {
	case *headers.RangeNPT:
		if r.End == nil {
			return r.Start.Seconds(), -1, nil
		}
		if *r.End < r.Start && !reverse {
			return 0, 0, fmt.Errorf("range ends (%s s) before it starts (%s s)", formatNPT(r.End.Seconds()), formatNPT(r.Start.Seconds()))
		}
		return r.Start.Seconds(), r.End.Seconds(), nil
	case *headers.RangeSMPTE:
		start, err := smpteSeconds(r.Start, fps)
		if err != nil {
			return 0, 0, err
		}
		if r.End == nil {
			return start, -1, nil
		}
		end, err := smpteSeconds(*r.End, fps)
		if err != nil {
			return 0, 0, err
		}
		if end < start && !reverse {
			return 0, 0, fmt.Errorf("range ends before it starts")
		}
		return start, end, nil
	}
	return 0, 0, errRangeFormat
}

// smpteSeconds returns an SMPTE time code (RFC 2326 §3.5:
// hours:minutes:seconds:frames.subframes, the subframes in hundredths of
// a frame) in seconds at fps frames a second (25 for smpte-25; 29.97 for
// smpte and smpte-30-drop, whose frames count 0 to 29, the drop-frame
// numbering's skipped numbers taken as they come: the error is under a
// frame a minute). A frame number past the rate or subframes over 99
// are errors.
func smpteSeconds(t headers.RangeSMPTETime, fps float64) (float64, error) {
	switch {
	case float64(t.Frame) >= math.Ceil(fps):
		return 0, fmt.Errorf("frame %d: at most %d at %v frames a second", t.Frame, int(math.Ceil(fps))-1, fps)
	case t.Subframe > 99:
		return 0, fmt.Errorf("subframe %d: at most 99", t.Subframe)
	}
	return t.Time.Seconds() + (float64(t.Frame)+float64(t.Subframe)/100)/fps, nil
}

func formatNPT(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

func (c *rtspConn) play(req *base.Request) (*base.Response, func(), *rtspError) {
	s, _, err := c.sessionOf(req)
	if err != nil {
		return nil, nil, err
	}
	s.ctl.Lock()
	defer s.ctl.Unlock()
	// Asked to play, the session is no longer paused by its viewer, even
	// when the PLAY fails (a player seeking past the end that PAUSEs, is
	// answered 457 and then waits in silence gets session_timeout, not
	// pause_timeout). Whether it is at the end of the title (atEnd)
	// changes only with a PLAY that succeeds.
	s.paused.Store(false)
	s.pause.resume(time.Now())
	// Its copy's fill failed for the origin: filled again, from the
	// partial it left, for this PLAY to go on past it (refillRTSP).
	c.n.refillRTSP(c.n.ctx, s, "PLAY")
	scale := 1.0
	if v, ok := req.Header["Scale"]; ok && len(v) > 0 {
		sc, err := strconv.ParseFloat(strings.TrimSpace(v[0]), 64)
		if err != nil || sc == 0 || math.IsNaN(sc) || math.IsInf(sc, 0) {
			return nil, nil, rtspErr(base.StatusBadRequest, "invalid Scale")
		}
		scale = sc
	}
	// A range that ends before it starts is for a play that goes
	// backwards: reverse trick play, granted for Scale <= -1 in MP2T mode
	// only (SetScale grants 1 for -1 < Scale < 0, and elementary streams
	// play at Scale 1), so a play granted forwards gets 457 for it.
	start, end, perr := parseRange(req.Header["Range"], scale <= -1 && s.es == nil)
	if errors.Is(perr, errRangeFormat) {
		return nil, nil, rtspErr(base.StatusNotImplemented, "%v", perr)
	}
	if perr != nil || math.IsNaN(start) || math.IsInf(start, 0) || math.IsNaN(end) || math.IsInf(end, 0) {
		return nil, nil, rtspErr(base.StatusInvalidRange, "%s", invalidRangeText(req.Header["Range"], perr))
	}
	dur := s.duration()
	endHere := false // libavformat past the end of a title still filling (lavfEndHere)
	if start >= 0 && dur > 0 && start >= dur {
		if !lavfSeekPastEnd(req, scale) {
			return nil, nil, rtspErr(base.StatusInvalidRange, "start %.3f s is at or past the end (%.3f s): start before it", start, dur)
		}
		// libavformat: played from the last keyframe to the end, whose
		// BYE ends its read (lavfSeekPastEnd); of a title still filling,
		// whose last keyframe is not known yet, the BYE at once.
		start, endHere = dur, lavfEndHere(s)
	}
	if p, ok := s.player.(interface{ Position() float64 }); ok && start < 0 && end >= 0 && scale > 0 {
		// A Range without a start ("npt=-3") ends the play under way:
		// an end before where it stands is a range that ends before it
		// starts, refused as "npt=7-3" is (it was answered 200 with
		// "npt=7.008-3.000" and the play held where it stood).
		if at := p.Position(); end < at {
			return nil, nil, rtspErr(base.StatusInvalidRange, "range ends (%s s) before where the play stands (%s s)", formatNPT(end), formatNPT(at))
		}
	}
	if e, ok := s.player.(interface{ AtEnd() bool }); ok && start < 0 && lavfSeekPastEnd(req, scale) && (e.AtEnd() || s.endedHere) {
		// libavformat resuming at the end (ffplay un-paused after the
		// BYE): a 457 leaves it waiting in silence for RTP, its BYE
		// count cleared by the PLAY; the end is played again, as a start
		// past the end is (the last keyframe, then the BYE), as live555
		// answers a PLAY at the end (200, then the BYE).
		start, endHere = dur, lavfEndHere(s)
	} else if ok && start < 0 && (scale > 0 || s.es != nil) && e.AtEnd() {
		// At the end of the title (its BYE sent), a play from where it
		// stands has nothing to send: it is refused as a Range starting
		// at the end is (RFC 2326 §11.3.12), nothing changed, rather
		// than answered 200 with a play that ends again at once. A
		// Range start plays it again; a negative Scale rewinds from
		// there (MP2T mode; elementary streams play at Scale 1 only).
		return nil, nil, rtspErr(base.StatusInvalidRange, "at the end of the title: PLAY with a Range (npt=0-) to play it again")
	}
	if scale <= -1 && s.es == nil { // reverse trick play (MP2T mode; SetScale grants 1 for -1 < Scale < 0)
		// From the title's start there is nothing to play backwards: a
		// Range out of bounds for the play asked (RFC 2326 §11.3.12), as
		// a start past the end is for a forward one; it was answered 200
		// with the first picture and then silence.
		from, known := start, start >= 0
		if p, ok := s.player.(interface{ Position() float64 }); ok && !known {
			from, known = p.Position(), true
		}
		if known && from < 0.001 { // npt's precision in the answers (formatNPT)
			return nil, nil, rtspErr(base.StatusInvalidRange, "nothing to play backwards from npt %s, the title's start: a negative Scale plays towards the start", formatNPT(from))
		}
	}
	if s.player == nil {
		if err := c.n.startES(s); err != nil {
			return nil, nil, err
		}
	}
	if s.ahead != nil {
		if normalPlay(scale) || s.es != nil { // elementary streams play at Scale 1 whatever is asked
			if p, ok := s.player.(interface{ Position() float64 }); ok && start < 0 && s.ahead.wants(p.Position()) {
				// Normal play again after trick play that stands far
				// ahead of the fill: from where it stands, as a seek
				// there (the keyframe at or before it), its bytes read
				// from the origin.
				start = p.Position()
			}
			s.ahead.seek(start) // far ahead of the fill: read from the origin
		} else {
			s.ahead.drop() // trick play: the fill's index, waiting for the fill
		}
	}
	infos, serr := s.player.Seek(start)
	if serr != nil && s.ahead != nil {
		s.ahead.drop() // nothing plays from there
	}
	if errors.Is(serr, deliver.ErrRange) {
		return nil, nil, rtspErr(base.StatusInvalidRange, "%v", serr)
	}
	if errors.Is(serr, store.ErrFillFailed) {
		// Nothing to play from start: the fill stopped before it (the
		// origin away, the title replaced there). A later request fills
		// again. A session never played ends once this is answered
		// (fillfail.go): it has nothing to play.
		var end func()
		if !c.n.hasStarted(s) {
			end = func() { c.n.endSession(s, fillFailedReason(serr), serr) }
		}
		return nil, end, unavailable(serr, "origin unavailable: %v", serr)
	}
	if errors.Is(serr, deliver.ErrEnded) {
		// The session ended while this PLAY ran (a TEARDOWN from another
		// connection, a timeout, the manager's order): it is gone.
		return nil, nil, rtspErr(base.StatusSessionNotFound, "session ended")
	}
	if serr != nil {
		return nil, nil, rtspErr(base.StatusInternalServerError, "%v", serr)
	}
	granted := s.player.SetScale(scale)
	// The end of the client's Range, honoured in normal play (RFC 2326
	// 12.29: the stream pauses there); a PLAY without one plays on to the
	// end of the title. An end at the title's end (GStreamer sends the
	// SDP's duration) is the end of the title: the stream ends there with
	// its BYE, and the answer stays open-ended (see below).
	rangeEnd := ""
	if st, ok := s.player.(interface{ SetStop(float64) }); ok {
		if end >= 0 && granted == 1 && (dur <= 0 || end < dur-1) {
			st.SetStop(end)
			rangeEnd = formatNPT(end)
		} else {
			st.SetStop(-1)
		}
	}
	s.atEnd.Store(false) // a play that ends again at once is marked again (onStreamEnd)
	s.endedHere = endHere
	c.n.started(s)
	h := base.Header{
		"Session": c.sessionValue(s),
		// open-ended unless the client gave an end, as live555 answers:
		// "to the end" (the duration is in the SDP's a=range). With an
		// end the client did not ask for, GStreamer's rtspsrc clips its
		// segment there and its jitterbuffer's NPT timeout can leave a
		// clock-synced pipeline hanging at the end of the title.
		"Range": base.HeaderValue{"npt=" + formatNPT(infos[0].NPT) + "-" + rangeEnd},
		"Scale": base.HeaderValue{strconv.FormatFloat(granted, 'f', 3, 64)},
	}
	if s.spec.Mode != deliver.RawUDP {
		var ri headers.RTPInfo
		for i, url := range s.trackURLs() {
			if url == "" {
				continue
			}
			seq, ts := infos[i].Seq, infos[i].RTPTime
			ri = append(ri, &headers.RTPInfoEntry{URL: url, SequenceNumber: &seq, Timestamp: &ts})
		}
		h["RTP-Info"] = ri.Marshal()
	}
	resume := s.player.Resume
	if e, ok := s.player.(interface{ EndHere() }); ok && endHere {
		resume = e.EndHere // the BYE after the response, no media
	}
	return &base.Response{StatusCode: base.StatusOK, Header: h}, resume, nil
}

// duration returns the session's title play time, seconds: from the index
// when complete, else from the catalog.
func (s *session) duration() float64 {
	if v := s.t().View(); v.Complete {
		if d := v.Index.Duration(); d > 0 {
			return d
		}
	}
	return s.meta.Duration
}
