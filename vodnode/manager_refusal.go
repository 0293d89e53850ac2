package vodnode

import (
	"errors"
	"strings"
	"time"

	"google.golang.org/grpc/status"
)

// registerError is the manager's answer to a registration that failed
// (Register), told apart from a failure of the heartbeat stream that
// follows: only a refused registration is about the node's configuration.
type registerError struct{ err error }

func (e *registerError) Error() string { return "register: " + e.err.Error() }
func (e *registerError) Unwrap() error { return e.err }

// logInvalid logs err, an INVALID_ARGUMENT of the manager, retried after
// backoff: the manager's own reason, and what to fix in the node's
// configuration only where the reason names a setting of it (a refused
// registration's address, capacity, weight or id). A load report refused
// on the heartbeat stream (a report naming another node than the stream's)
// or a registration refused for what the node's store listed is no
// configuration mistake: it was logged as one ("fix the node's
// configuration (advertise_host, ...)").
func (m *managerLink) logInvalid(err error, backoff time.Duration) {
	var rerr *registerError
	if !errors.As(err, &rerr) {
		m.n.log.Error("the manager refuses this node's load report on its heartbeat stream; registering again",
			"manager", m.n.ManagerAddr, "reason", status.Convert(err).Message(), "in", backoff)
		return
	}
	reason := status.Convert(rerr.err).Message()
	if fix := registrationFix(reason); fix != "" {
		m.n.log.Error("the manager refuses this node's registration: "+fix+"; retrying",
			"manager", m.n.ManagerAddr, "reason", reason, "in", backoff)
		return
	}
	m.n.log.Error("the manager refuses this node's registration; retrying",
		"manager", m.n.ManagerAddr, "reason", reason, "in", backoff)
}

// registrationFix returns what to change in the node's configuration for
// reason, the manager's refusal of its registration (acm's Register names
// the field it refuses), or "" when the reason names none of its settings
// (stored titles or partials the node listed, an error of the manager's
// own).
func registrationFix(reason string) string {
	switch {
	case strings.HasPrefix(reason, "node_id "):
		return "fix the node's id (id: 1-128 of A-Z a-z 0-9 . _ -)"
	case strings.HasPrefix(reason, "rtsp_addr "), strings.HasPrefix(reason, "http_addr "), strings.HasPrefix(reason, "rtsps_addr "):
		return "fix the address the node announces (advertise_host, or the listen address: rtsp_listen, http_listen, rtsps_listen)"
	case strings.HasPrefix(reason, "capacity"), strings.Contains(reason, "egress capacity"), strings.Contains(reason, "session or disk limit"):
		return "fix the node's capacity (egress_bps, max_sessions, disk_bytes)"
	case strings.HasPrefix(reason, "weight "), strings.Contains(reason, ": weight "):
		return "fix the node's weight (weight: 0 to 65535)"
	}
	return ""
}
