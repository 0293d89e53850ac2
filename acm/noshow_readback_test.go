package acm

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"vodcluster/acm/store"
)

// TestNoShowReadBackIsNotLoadedAgain: a session whose viewer never reached
// its node ends as a no-show at its deadline (token_ttl + the no-show
// grace after its token); when Redis stalls then, the delete of its entry
// waits for the store's return, and a load of the store's sessions that
// reads the entry first (the takeover at the manager's retake of the
// planner lock, a node's registration) added it back to the table as a
// new session: it held its node's bandwidth and its subscriber's slot
// again, and ended as a no-show a second time, with a second record, at
// the next tick after the load (or RestoreGrace after it, its node not
// alive then): past the deadline the README gives. The load now leaves
// it out and deletes the entry; one whose viewer was given a newer token
// since (another manager's front door) is loaded. Time is driven by
// calling tick with the instant to judge.
func TestNoShowReadBackIsNotLoadedAgain(t *testing.T) {
	open, _ := sharedRedis(t)
	st := open()
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	e := newManager(t, "", func(m *Manager) {
		onShared(st, &countPlanner{}, time.Minute)(m)
		m.SessionRecordsFile = path
		m.Scheduler.HeartbeatInterval = 30 * time.Second // the ticks below, a minute ahead, leave the node alive
	})
	const httpAddr = "127.0.0.1:7097"
	e.startNode("n1", nodeOpts{http: httpAddr})
	res := e.get("GET", "/vod/t1.ts", "demo", "demo")
	if res.StatusCode != http.StatusFound {
		t.Fatalf("GET %d, want 302", res.StatusCode)
	}
	sid := e.tokenOf(res.Header.Get("Location"), "http", httpAddr, "t1", ".ts").Session
	ctx := context.Background()
	entry, err := st.Session(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	deadline := entry.AdmittedAt.Add(e.m.TokenTTL + e.m.NoShowGrace)

	e.m.tick(deadline.Add(time.Second))
	if e.session(sid) != nil {
		t.Fatalf("session %s live past its no-show deadline %v", sid, deadline)
	}
	// The entry as a load that read it before the no-show's delete (held
	// by the stalled store) sees it.
	if err := st.PutSession(ctx, entry); err != nil {
		t.Fatal(err)
	}
	if n, err := e.m.loadSessions(ctx, ""); n != 0 || err != nil {
		t.Fatalf("sessions loaded: %d %v, want none: the no-show's entry is no session", n, err)
	}
	e.m.tick(deadline.Add(2 * time.Second))
	if s := e.session(sid); s != nil {
		t.Fatalf("the no-show's session is in the table again: %+v", s)
	}
	if _, err := st.Session(ctx, sid); err == nil {
		t.Fatal("the no-show's entry is still in the store")
	}
	if rs := readRecords(t, path); len(rs) != 1 || rs[0].Reason != "no-show" {
		t.Fatalf("records %+v, want the one no-show's", rs)
	}
	e.m.mu.Lock()
	noShows := e.m.nodes["n1"].noShows
	e.m.mu.Unlock()
	if noShows != 1 {
		t.Fatalf("n1's no-shows %d, want 1", noShows)
	}

	// Its viewer given a newer token since, by another manager: loaded.
	entry.TokenAt = time.Now()
	if err := st.PutSession(ctx, entry); err != nil {
		t.Fatal(err)
	}
	if n, err := e.m.loadSessions(ctx, ""); n != 1 || err != nil {
		t.Fatalf("sessions loaded: %d %v, want the session whose viewer has a newer token", n, err)
	}
	if s := e.session(sid); s == nil || s.State != store.StateAdmitted {
		t.Fatalf("session with a newer token after the load: %+v, want admitted", s)
	}
}
