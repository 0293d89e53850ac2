package acm

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

// A session moved while the origin is down (its viewer never reached its
// node, another node has the title) is ended on its node with the reason
// reasonMovedOriginDown, which its session record carries (docs: the 503
// row of docs/delivery.md).
func TestOriginDownMoveTellsTheNode(t *testing.T) {
	e, nodes := originDownPair(t)
	get := sameViewerGet(t, e)
	if code := get(); code != http.StatusFound {
		t.Fatalf("first request: %d", code)
	}
	first := e.sessions()[0]
	other := map[string]string{"n1": "n2", "n2": "n1"}[first.NodeId]
	e.setOriginDown(t)
	e.holdWhole(t, nodes[other], "t2")
	if code := get(); code != http.StatusFound {
		t.Fatalf("same viewer, origin down, t2 on %s: %d", other, code)
	}
	cmd := nodes[first.NodeId].endCommand(t)
	if !slices.Equal(cmd.GetSessionIds(), []string{first.SessionId}) || cmd.GetReason() != reasonMovedOriginDown {
		t.Fatalf("node %s told %+v, want %s ended (%q)", first.NodeId, cmd, first.SessionId, reasonMovedOriginDown)
	}
}

// A session to be moved while the origin is down is ended only once its
// viewer's new session is placed: with the node that has the title full,
// the viewer waits the queue deadline, is refused (503), and keeps its
// session for when the origin returns.
func TestOriginDownMoveRefusedKeepsTheSession(t *testing.T) {
	e := newManager(t, "", func(m *Manager) {
		m.OriginCheck = 50 * time.Millisecond
		m.QueueDeadline = 300 * time.Millisecond
	})
	e.startNode("n1", nodeOpts{http: "127.0.0.1:3"})
	full := e.startNode("n2", nodeOpts{http: "127.0.0.1:4", egress: titleBps / 2}) // never room for t2
	get := sameViewerGet(t, e)
	if code := get(); code != http.StatusFound {
		t.Fatalf("first request: %d", code)
	}
	first := e.sessions()[0]
	if first.NodeId != "n1" {
		t.Fatalf("first session on %s, want n1 (n2 has no room)", first.NodeId)
	}
	e.setOriginDown(t)
	e.holdWhole(t, full, "t2")
	if code := get(); code != http.StatusServiceUnavailable {
		t.Fatalf("same viewer, origin down, t2 only on the full n2: %d, want 503", code)
	}
	if got := e.sessionIDs(); !slices.Equal(got, []string{first.SessionId}) {
		t.Fatalf("sessions %v after the refusal, want %s kept", got, first.SessionId)
	}
}

// A subscriber at max_sessions_per_user is moved all the same: the
// session moved is not counted against the limit for its replacement.
func TestOriginDownMoveAtSessionLimit(t *testing.T) {
	e := newManager(t, "", func(m *Manager) {
		m.OriginCheck = 50 * time.Millisecond
		m.MaxSessionsPerUser = 1
	})
	nodes := map[string]*fakeNode{
		"n1": e.startNode("n1", nodeOpts{http: "127.0.0.1:3"}),
		"n2": e.startNode("n2", nodeOpts{http: "127.0.0.1:4"}),
	}
	get := sameViewerGet(t, e)
	if code := get(); code != http.StatusFound {
		t.Fatalf("first request: %d", code)
	}
	first := e.sessions()[0]
	other := map[string]string{"n1": "n2", "n2": "n1"}[first.NodeId]
	e.setOriginDown(t)
	e.holdWhole(t, nodes[other], "t2")
	if code := get(); code != http.StatusFound {
		t.Fatalf("same viewer at its session limit, origin down, t2 on %s: %d, want 302", other, code)
	}
	got := e.sessions()
	if len(got) != 1 || got[0].SessionId == first.SessionId || got[0].NodeId != other {
		t.Fatalf("sessions %v, want one new session on %s", got, other)
	}
}

// sameViewerGet returns a function that asks e's front door for t2 over
// HTTP as demo from one address and returns the status, redirects not
// followed.
func sameViewerGet(t *testing.T, e *env) func() int {
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return func() int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+e.m.HTTPAddr()+"/vod/t2.ts", nil)
		req.SetBasicAuth("demo", "demo")
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
}
