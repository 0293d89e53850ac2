package acm

import (
	"net/http"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/proto/token"
)

// TestNoShowFollowsTheNewestToken: a viewer who asks the front door again
// before reaching its node (an HTTP player retrying its redirect, a
// second DESCRIBE on one RTSP connection) gets a new token for the same
// session, and the session's no-show deadline follows that token, as the
// node's ExpectCommand does: the manager does not end as a no-show a
// session whose new token is still good and whose node still expects its
// viewer. Time is driven by calling tick with the instant to judge.
func TestNoShowFollowsTheNewestToken(t *testing.T) {
	for _, proto := range []string{"http", "rtsp"} {
		t.Run(proto, func(t *testing.T) { testNoShowFollowsTheNewestToken(t, proto) })
	}
}

func testNoShowFollowsTheNewestToken(t *testing.T, proto string) {
	const ttl, grace = 30 * time.Second, 10 * time.Second
	e := newManager(t, "", func(m *Manager) {
		m.TokenTTL, m.NoShowGrace = ttl, grace
		// The ticks the test makes, up to ttl+grace ahead, leave the
		// node alive (dead after 3 missed heartbeats: 90 s); the
		// manager's own ticks come every 15 s.
		m.Scheduler.HeartbeatInterval = 30 * time.Second
	})
	const rtspAddr, httpAddr = "127.0.0.1:5561", "127.0.0.1:7095"
	n := e.startNode("n1", nodeOpts{rtsp: rtspAddr, http: httpAddr})
	var rc *rtspClient
	if proto == "rtsp" {
		rc = e.dialRTSP()
	}
	ask := func(what string) *token.Claims {
		t.Helper()
		if proto == "http" {
			res := e.get("GET", "/vod/t1.ts", "demo", "demo")
			if res.StatusCode != http.StatusFound {
				t.Fatalf("%s: GET %d, want 302", what, res.StatusCode)
			}
			return e.tokenOf(res.Header.Get("Location"), "http", httpAddr, "t1", ".ts")
		}
		res := rc.mustDo(base.Describe, "/vod/t1", basicHeader("demo", "demo"))
		if res.StatusCode != base.StatusFound {
			t.Fatalf("%s: DESCRIBE %d, want 302", what, res.StatusCode)
		}
		return e.tokenOf(res.Header["Location"][0], "rtsp", rtspAddr, "t1", "")
	}

	first := ask("first request")
	waitFor(t, 5*time.Second, "the first ExpectCommand", func() bool { return len(n.expected()) == 1 })
	// The first token was given ttl+grace-10s ago: its no-show is 10 s away.
	e.m.mu.Lock()
	s := e.m.sessions[first.Session]
	if s == nil {
		e.m.mu.Unlock()
		t.Fatalf("session %s not in the table", first.Session)
	}
	s.AdmittedAt = s.AdmittedAt.Add(-(ttl + grace - 10*time.Second))
	oldNoShow := s.AdmittedAt.Add(ttl + grace)
	e.m.mu.Unlock()

	again := ask("same viewer again")
	if again.Session != first.Session {
		t.Fatalf("same viewer again: session %s, want its session %s", again.Session, first.Session)
	}
	waitFor(t, 5*time.Second, "the ExpectCommand sent again", func() bool { return len(n.expected()) == 2 })
	x := n.expected()[1]
	until := time.UnixMilli(x.GetUntilUnixMs())
	if x.GetSessionId() != first.Session || until.Sub(again.ExpiresAt.Time) < grace || until.Sub(again.ExpiresAt.Time) >= grace+time.Second {
		t.Fatalf("ExpectCommand sent again %v, want session %s until NoShowGrace after the new token's expiry %v", x, first.Session, again.ExpiresAt.Time)
	}

	// Past the first token's no-show, well within the new token's.
	e.m.tick(oldNoShow.Add(time.Second))
	if e.session(first.Session) == nil {
		t.Fatalf("session ended at %v, past the first token's no-show (%v), while its new token expires %v and its node expects the viewer until %v",
			oldNoShow.Add(time.Second), oldNoShow, again.ExpiresAt.Time, until)
	}
	// Past the new token's no-show (the node's deadline): a no-show.
	e.m.tick(until.Add(time.Second))
	if e.session(first.Session) != nil {
		t.Fatalf("session still live at %v, past its new token's no-show %v", until.Add(time.Second), until)
	}
}
