package acm

import (
	"context"
	"errors"
	"log/slog"
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

// readmitMemory is how long the front door remembers an admission
// session it re-admitted (readmitted), past its ticket's expiry: longer
// than a node remembers a spent token (its expiry, and its
// session_timeout after the session's end), so that no second ticket of
// that session, whatever made it, is taken either.
const readmitMemory = time.Hour

// readmitted holds the admission sessions the front door re-admitted
// with a ticket, each readmitMemory past the ticket's expiry: one ended
// session is re-admitted once (per manager). The zero value is ready.
type readmitted struct {
	mu    sync.Mutex
	until map[string]time.Time // admission session id -> when it may be forgotten
}

// forget drops admission session sid (none when ""): its re-admission
// was refused after its ticket was taken (the session limit, no node),
// and the viewer may try the ticket again.
func (r *readmitted) forget(sid string) {
	if sid == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.until, sid)
}

// take reports whether admission session sid, whose ticket is good until
// until, is re-admitted now for the first time, and remembers it; the
// entries past their time are dropped.
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
	r.until[sid] = until.Add(readmitMemory)
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
// there, GStreamer falling back from UDP to TCP) for title from ip over
// proto (rtsp, rtsps), and returns the subscriber it names and the ended
// admission session it re-admits, which is re-admitted once (readmitted;
// forget it when the admission is refused). Errors: readmitRefused (401).
// The entitlement, a suspension and the session limit are checked at
// admission, as for a password.
func (m *Manager) authenticateReadmit(raw, title, ip, proto string) (user, ended string, err error) {
	now := m.now()
	c, err := m.signer.VerifyReadmit(raw, now, title, ip)
	if err == nil {
		err = c.CheckProto(proto) // an RTSPS viewer's ticket is not good in clear
	}
	refused := func(reason string, attrs ...any) (string, string, error) {
		lvl := slog.LevelInfo
		if !m.refusalLog.Allow() {
			lvl = slog.LevelDebug // a flood of bad tickets: counted (unauthorized), not each logged
		}
		m.log.Log(context.Background(), lvl, "re-admission ticket refused", append([]any{"title", title, "client", ip, "why", reason}, attrs...)...)
		return "", "", readmitRefused{reason}
	}
	switch {
	case errors.Is(err, token.ErrExpired):
		return refused("expired")
	case errors.Is(err, token.ErrScope):
		return refused("for another title, client or protocol")
	case err != nil:
		return refused("it does not verify")
	case !m.readmits.take(c.Session, c.ExpiresAt.Add(token.ClockSkew), now):
		return refused("its session was re-admitted already", "user", c.User, "session", c.Session)
	}
	m.log.Info("re-admission: a viewer sent back by its node", "title", title, "client", ip, "user", c.User, "ended_session", c.Session, "node", c.Node)
	return c.User, c.Session, nil
}
