package acm

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestNewTokenKeepsAdmittedAt: the same HTTP viewer asking the front door
// again (a player seeking right after probing) gets a new token and a
// later no-show deadline, but its session's admission time is left as it
// was: the viewer may have reached its node already, its STARTED event on
// its way to the manager, and its record (admitted_at) and listing
// (admitted_unix_ms) would otherwise put its admission after its start.
func TestNewTokenKeepsAdmittedAt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	e := newManager(t, "", func(m *Manager) { m.SessionRecordsFile = path })
	const httpAddr = "127.0.0.1:7096"
	n := e.startNode("n1", nodeOpts{http: httpAddr})
	ask := func(what string) string {
		t.Helper()
		res := e.get("GET", "/vod/t1.ts", "demo", "demo")
		if res.StatusCode != http.StatusFound {
			t.Fatalf("%s: GET %d, want 302", what, res.StatusCode)
		}
		return e.tokenOf(res.Header.Get("Location"), "http", httpAddr, "t1", ".ts").Session
	}
	sid := ask("first request")
	// Admitted 5 s ago (so that a moved admission time shows, to the ms).
	e.m.mu.Lock()
	s := e.m.sessions[sid]
	s.AdmittedAt = s.AdmittedAt.Add(-5 * time.Second)
	admitted := s.AdmittedAt
	e.m.mu.Unlock()
	// The viewer reached its node a second ago; the manager has not heard.
	startedAt := time.Now().Add(-time.Second)
	if again := ask("same viewer again"); again != sid {
		t.Fatalf("same viewer again: session %s, want %s", again, sid)
	}
	if got := e.session(sid).GetAdmittedUnixMs(); got != admitted.UnixMilli() {
		t.Errorf("listed admitted_unix_ms %d after the new token, want the admission's %d", got, admitted.UnixMilli())
	}
	for _, ev := range []*pb.SessionEvent{
		{NodeId: "n1", SessionId: sid, Kind: pb.SessionEvent_KIND_STARTED, AtUnixMs: startedAt.UnixMilli()},
		{NodeId: "n1", SessionId: sid, Kind: pb.SessionEvent_KIND_ENDED, Reason: "teardown", AtUnixMs: time.Now().UnixMilli()},
	} {
		if _, err := n.nc.ReportSession(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "the session's record", func() bool { return len(readRecords(t, path)) == 1 })
	r := readRecords(t, path)[0]
	if r.AdmittedAt.Sub(admitted).Abs() > time.Millisecond || r.AdmittedAt.After(r.StartedAt.Time) {
		t.Fatalf("record admitted_at %v, started_at %v: want the admission %v, before the start", r.AdmittedAt, r.StartedAt, admitted.UTC())
	}
}
