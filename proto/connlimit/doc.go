// Package connlimit caps the open TCP connections of each client address
// (an IPv6 client's /64) over a set of listeners, and answers one over
// the cap in its own protocol (RTSP or HTTP 503 with Retry-After) before
// closing it, so that a player can tell "too many connections from your
// address" from a crash. The manager's front door and the VOD nodes
// share it; each names its own setting and counts its own refusals.
// golang.org/x/net/netutil.LimitListener caps a listener's connections
// in total, not per address.
package connlimit
