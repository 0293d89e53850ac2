package acm

import (
	"errors"
	"math"
	"strconv"
)

// refusalRetryAfter is the Retry-After of the front door's answer to a
// request refused with err, in whole seconds, the same over RTSP and HTTP;
// "" for a refusal that carries none:
//   - the client's own (401, 403, 404, 416) and a subscriber at
//     max_sessions_per_user: a slot frees when a viewer stops, not at a
//     time, unless an HTTP session of the request's client will be quiet
//     long enough to give way (supersedeIdleLocked): then that time over
//     HTTP (429; RTSP's refusal is a 403, which takes none);
//   - a title whose bitrate is over every node's egress: no node will have
//     room for it until the operator acts.
//
// Too many failed logins and a subscriber over its request limit say when
// the limiter lets the next request in (retryAfter); a refusal for want
// of a node, bandwidth, disk room or an origin channel, QueueDeadline (a
// queued request waits that long for one to free); an origin that is down,
// the time the manager takes to find it back (originDownAfter checks of
// OriginCheck); anything else (no catalog yet, the store or the subscriber
// database not answering), 5 s. Each is at least 1 s.
func (m *Manager) refusalRetryAfter(err error) string {
	seconds := func(s float64) string { return strconv.Itoa(int(math.Ceil(max(s, 1)))) }
	switch {
	case err == nil,
		errors.Is(err, errUnauthorized), errors.Is(err, errTokenTitle), errors.Is(err, errEndedByOperator),
		errors.Is(err, errSuspended), errors.Is(err, errForbidden),
		errors.Is(err, errNoTitle), errors.As(err, new(rangeRefused)),
		errors.Is(err, errOverEgress): // before errNoBandwidth, which it wraps
		return ""
	case errors.Is(err, errUserLimit):
		if errors.As(err, new(retryLater)) {
			return retryAfter(err)
		}
		return ""
	case errors.Is(err, errThrottled), errors.Is(err, errRateLimited):
		return retryAfter(err)
	case errors.Is(err, errNoBandwidth): // no node reporting or in service, no disk room, no source, origin busy
		return seconds(m.QueueDeadline.Seconds())
	case errors.Is(err, errOriginDown):
		return seconds(m.OriginCheck.Seconds() * originDownAfter)
	default:
		return "5"
	}
}
