package acm

import (
	"errors"
	"net/url"
	"sync"
	"time"

	"vodcluster/proto/token"
)

// readmitRefused is a re-admission ticket the front door does not take
// (authenticateReadmit): a 401 with the usual challenge, which a player
// that knows the subscriber's credentials answers.
type readmitRefused struct{ reason string }

func (e readmitRefused) Error() string { return "re-admission ticket refused: " + e.reason }
func (e readmitRefused) Unwrap() error { return errUnauthorized }

// readmitted holds the admission sessions whose re-admission ticket the
// front door took, each until its ticket expires: a ticket is taken once
// (per manager). The zero value is ready.
type readmitted struct {
	mu    sync.Mutex
	until map[string]time.Time // admission session id -> its ticket's expiry (ClockSkew added)
}

// take reports whether the ticket of admission session sid, good until
// until, is taken now for the first time, and remembers it; the expired
// entries are dropped.
func (r *readmitted) take(sid string, until, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.until == nil {
		r.until = map[string]time.Time{}
	}
	for id, u := range r.until {
		if now.After(u) {
			delete(r.until, id)
		}
	}
	if _, ok := r.until[sid]; ok {
		return false
	}
	r.until[sid] = until
	return true
}

// readmitTicket returns the re-admission ticket in a request URL's raw
// query (readmit=…), "" when there is none.
func readmitTicket(rawQuery string) string {
	if rawQuery == "" {
		return ""
	}
	v, _ := url.ParseQuery(rawQuery)
	return v.Get("readmit")
}

// authenticateReadmit checks re-admission ticket raw (token.Signer.Readmit:
// a node sent back to the front door a viewer whose session had ended
// there, GStreamer falling back from UDP to TCP) for title from ip, and
// returns the subscriber it names. Each ticket is taken once. Errors:
// readmitRefused (401). The entitlement, a suspension and the session
// limit are checked at admission, as for a password.
func (m *Manager) authenticateReadmit(raw, title, ip string) (string, error) {
	now := m.now()
	c, err := m.signer.VerifyReadmit(raw, now, title, ip)
	if err != nil {
		reason := "it does not verify"
		switch {
		case errors.Is(err, token.ErrExpired):
			reason = "expired"
		case errors.Is(err, token.ErrScope):
			reason = "for another title or client"
		}
		m.log.Info("re-admission ticket refused", "title", title, "client", ip, "why", reason)
		return "", readmitRefused{reason}
	}
	if !m.readmits.take(c.Session, c.ExpiresAt.Add(token.ClockSkew), now) {
		m.log.Info("re-admission ticket refused: already used", "title", title, "client", ip, "user", c.User, "session", c.Session)
		return "", readmitRefused{"already used"}
	}
	m.log.Info("re-admission: a viewer sent back by its node", "title", title, "client", ip, "user", c.User, "ended_session", c.Session, "node", c.Node)
	return c.User, nil
}
