package vodnode

import (
	"context"
	"errors"
	"math"
	"net/http"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/proto/durtext"
	"vodcluster/vodnode/store"
)

// A viewer whose title's fill fails before the node has any of the title
// to send it (the origin refuses the node's credential, does not have the
// title, or stays away for fill_retry_for) is told so, not answered with
// an empty play: over HTTP 503 "title unavailable" (a progressive
// download's status line waits for its first bytes: heldHeader), over
// RTSP 503 to the PLAY (or, in elementary-stream mode, to the DESCRIBE,
// which waits for the title's PMT). Its session ends at once, reported
// ENDED with reason "fill failed: <cause>" (store.FailCause) at its start:
// the session record's played_s is 0, not the time the viewer waited
// for nothing.
//
// 503, not 502 Bad Gateway: RFC 9110 §15.6.3 has 502 for an invalid
// response from the upstream server, which a refusal (UNAUTHENTICATED,
// NOT_FOUND) or an origin that does not answer is not; §15.6.4's 503 is
// a server unable to handle the request now, with Retry-After when it
// may later. It is also what the node answers for the origin's other
// failures (storeError, titleUnavailable).

// fillFailedReason is the ENDED reason of a session that ended because
// its title's fill failed (err, a store.ErrFillFailed) before the node
// sent it any of the title: "fill failed: " and the failure's class
// (origin, not_found, disk, replaced, ...: store.FailCause).
func fillFailedReason(err error) string {
	return "fill failed: " + store.FailCause(err)
}

// failedText is what a viewer is told of its title's fill that failed
// with err: what failed, in words, without the origin's or the node's
// details (the origin's gRPC error, file times, versions, the node's
// paths), which the node's log has ("fill failed").
func failedText(err error) string {
	switch c := status.Code(err); {
	case c == codes.Unauthenticated || c == codes.PermissionDenied:
		return "its fill failed: the origin refused the node (its credential)"
	}
	switch store.FailCause(err) {
	case "replaced":
		return "its fill failed: the title was replaced at the origin; ask for it again"
	case "mismatch":
		return "its fill failed: the origin's bytes did not match the title's version"
	case "disk":
		return "its fill failed: the node's disk could not take it"
	case "not_found":
		return "its fill failed: the origin no longer has the title"
	case "abandoned", "preempted", "cancelled":
		return "its fill was stopped"
	}
	return "its fill failed: the origin stopped sending it"
}

// retryLater reports whether a viewer refused because its title's fill
// failed with err may be served by asking again later (Retry-After): not
// when the origin refused the node (UNAUTHENTICATED, PERMISSION_DENIED:
// its credential is not the origin's, which an operator must fix) or does
// not have the title (NOT_FOUND).
func retryLater(err error) bool {
	switch status.Code(err) {
	case codes.Unauthenticated, codes.PermissionDenied, codes.NotFound:
		return false
	}
	return true
}

// retryAfter is the Retry-After of the node's 503s (RFC 9110 §10.2.3,
// RFC 2326 §12.31), in seconds: when a player that asks again may be
// served.
const retryAfter = "5"

// unavailable returns a 503 Service Unavailable, over RTSP and HTTP
// (httpError) alike, with Retry-After retryAfter unless its cause, when
// not nil, is one no retry can succeed soon after (retryLater): the
// node's own state (draining, shutting down: cause nil) and the origin
// away are asked again later; the origin refusing the node or not having
// the title is not.
func unavailable(cause error, format string, args ...any) *rtspError {
	e := rtspErr(base.StatusServiceUnavailable, format, args...)
	if cause == nil || retryLater(cause) {
		e.header = base.Header{"Retry-After": base.HeaderValue{retryAfter}}
	}
	return e
}

// titleUnavailable answers an HTTP request whose title has no bytes to
// give it (its fill failed, or none came within requestTimeout): 503,
// plain text, with Retry-After 5 s as the node's other 503s (httpError)
// so that a player asks again later rather than at once, unless no retry
// can succeed soon (retryLater).
func titleUnavailable(w http.ResponseWriter, err error) {
	if retryLater(err) {
		w.Header().Set("Retry-After", retryAfter)
	}
	msg := "title unavailable: " + failedText(err)
	if errors.Is(err, context.DeadlineExceeded) {
		// Not the title's fault: its fill may be on its way (a segment
		// asked ahead of a slow fill).
		msg = "not filled yet: the title's fill did not bring the bytes asked for within " + durtext.Written(requestTimeout) + "; try again"
	}
	http.Error(w, msg, http.StatusServiceUnavailable)
}

// fillFailedEmpty ends hs at once when its title's fill failed (err is
// store.ErrFillFailed) before hs was sent any byte of the title: reported
// ENDED at its start (fillFailedReason), so that it does not show playing
// until its idle timeout, nor bill the wait. A session that was sent
// bytes is left as it was (a fill failing mid-stream: its viewer plays on
// what is on disk).
func (n *Node) fillFailedEmpty(hs *httpSession, err error) {
	if !errors.Is(err, store.ErrFillFailed) || hs.bytes.Load() > 0 {
		return
	}
	n.endHTTPSessionAt(hs, fillFailedReason(err), hs.startedAt, func() bool { return hs.bytes.Load() == 0 })
}

// watchFill ends hs, an HTTP session whose first request ended with no
// byte of the title sent, when its title's fill fails (or has failed)
// before the node has any byte of the title, while hs has still been sent
// no byte and none of its viewer's requests is in progress (a fill that
// failed with bytes on disk leaves hs be: its viewer's next request, an
// HLS player's first segment after its playlist, a download after its
// HEAD, plays them): a viewer who left before the failure (a download given
// up, an HLS player after the 503 of a playlist that waited 10 s) ends as
// fillFailedEmpty ends one who is still asking, at once and at its start.
// Without it the session showed playing, and held its reservation and one
// of its subscriber's sessions, until pause_timeout (5 min), and its
// record billed that time. A request in progress is left to its own
// answer (answered, and the HLS handlers), which ends the session so when
// the bytes it asks for never come. Called once per session (watched), at
// the end of a request.
func (n *Node) watchFill(hs *httpSession) {
	t := hs.t()
	failed := func() {
		v := t.View()
		err := v.Err
		if err == nil || v.Index.Size > 0 {
			// complete; or failed with bytes on disk, which the
			// viewer's next request is still served (filledPast)
			return
		}
		go n.endHTTPSessionAt(hs, fillFailedReason(err), hs.startedAt, func() bool {
			return hs.bytes.Load() == 0 && hs.active.Load() == 0
		})
	}
	if !t.Notify(math.MaxInt64, failed) { // only the fill's end wakes it
		failed()
	}
}

// heldHeader holds the status line of a progressive download's answer
// (200 or 206: http.ServeContent writes it before it reads the body)
// until the first bytes of the body are there to send (release), so that
// a title whose fill fails before them is answered 503 (drop), not 200
// and then nothing. The hold ends requestTimeout after the request at
// the latest (titleReader.waitFill): the answer then goes out, and the
// body waits for the fill as it did. Used from the handler's goroutine
// only.
type heldHeader struct {
	on   bool      // hold a 200 or 206 written from now
	code int       // the status held; 0: none
	due  time.Time // the hold's end
}

// answered ends a progressive download's answer once serveContent has
// returned: a status line still held (no byte of the body went out) is
// written, or, when the reader found the title's fill failed with nothing
// for it (rd.fillErr), replaced by 503 (titleUnavailable); and a session
// whose fill failed before it was sent any byte ends (fillFailedEmpty).
func (n *Node) answered(aw *activityWriter, hs *httpSession, rd *titleReader) {
	ferr := rd.fillErr()
	if aw.held.code != 0 {
		if ferr == nil {
			aw.release()
		} else {
			aw.held = heldHeader{}
			h := aw.Header()
			for _, k := range []string{"Content-Length", "Content-Range", "Accept-Ranges", "Etag"} {
				h.Del(k) // serveContent's, of the answer held
			}
			titleUnavailable(aw, ferr)
		}
	}
	if ferr != nil {
		n.fillFailedEmpty(hs, ferr)
	}
}

// hasStarted reports whether RTSP session s has played (STARTED
// reported).
func (n *Node) hasStarted(s *session) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return s.started
}

// probeUnavailable returns the 503 of a probe of title t's elementary
// streams (deliver.ProbeES, which waits for the fill's PMT and first
// parameter sets) that failed with err for want of the title's bytes: its
// fill failed before them, or they did not come within the request's
// bound (requestTimeout); nil for a probe that read the title and found
// no elementary streams in it (415). Either way no SDP without the
// streams' parameters is answered.
func probeUnavailable(t *store.Title, err error) *rtspError {
	switch {
	case errors.Is(err, store.ErrFillFailed):
		return unavailable(err, "title unavailable: %s", failedText(err))
	case errors.Is(err, context.DeadlineExceeded) && !t.View().Complete:
		return unavailable(nil, "title unavailable: its fill brought no stream parameters within %s", durtext.Written(requestTimeout))
	}
	return nil
}
