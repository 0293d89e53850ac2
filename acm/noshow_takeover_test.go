package acm

import (
	"context"
	"net/http"
	"testing"
	"time"

	"vodcluster/acm/store"
	"vodcluster/proto/token"
)

// TestNoShowNewestTokenAfterTakeover: two managers share one Redis. A
// viewer admitted on A asks A's front door again before reaching its
// node and gets a new token; its no-show deadline follows that token on
// A, and, stored with the session (token_at), on B once B takes over:
// B sends the node, when it registers, the new token's deadline, and does
// not end the session as a no-show past the first token's deadline while
// the new token is still good (B used the stored admission time, and
// ended it); past the new token's deadline, it does. Time is driven by
// calling tick with the instant to judge.
func TestNoShowNewestTokenAfterTakeover(t *testing.T) {
	const ttl, grace = 30 * time.Second, 10 * time.Second
	open, _ := sharedRedis(t)
	stA, stB := open(), open()
	configure := func(st store.Store) func(*Manager) {
		return func(m *Manager) {
			// RestoreGrace a minute: B's ticks below, up to ttl+grace
			// ahead, judge the session by its no-show only.
			onShared(st, &countPlanner{}, time.Minute)(m)
			m.TokenTTL, m.NoShowGrace = ttl, grace
			// Those ticks leave the node alive (dead after 3 missed
			// heartbeats: 90 s); the managers' own ticks come every 15 s.
			m.Scheduler.HeartbeatInterval = 30 * time.Second
		}
	}
	a := newManager(t, "", configure(stA))
	if !a.m.Leader() {
		t.Fatal("the first manager on a free lock is not the leader")
	}
	b := newManager(t, "", configure(stB))
	const httpAddr = "127.0.0.1:7098"
	n := a.startNode("n1", nodeOpts{http: httpAddr})
	ask := func(what string) *token.Claims {
		t.Helper()
		res := a.get("GET", "/vod/t1.ts", "demo", "demo")
		if res.StatusCode != http.StatusFound {
			t.Fatalf("%s: GET %d, want 302", what, res.StatusCode)
		}
		return a.tokenOf(res.Header.Get("Location"), "http", httpAddr, "t1", ".ts")
	}
	first := ask("first request")
	sid := first.Session
	// Admitted ttl+grace-10s ago, in A's table and in the store: the first
	// token's no-show is 10 s away.
	a.m.mu.Lock()
	s := a.m.sessions[sid]
	if s == nil {
		a.m.mu.Unlock()
		t.Fatalf("session %s not in A's table", sid)
	}
	s.AdmittedAt = s.AdmittedAt.Add(-(ttl + grace - 10*time.Second))
	admitted := s.AdmittedAt
	a.m.mu.Unlock()
	if err := a.m.persist(s); err != nil {
		t.Fatal(err)
	}
	oldNoShow := admitted.Add(ttl + grace)

	again := ask("same viewer again")
	if again.Session != sid {
		t.Fatalf("same viewer again: session %s, want its session %s", again.Session, sid)
	}
	// The new token's time is written off the front door: wait for it.
	var stored store.Session
	waitFor(t, 5*time.Second, "the new token's time stored", func() bool {
		got, err := stB.Session(context.Background(), sid)
		stored = got
		return err == nil && got.TokenAt.After(admitted)
	})
	// The token's expiry is signed in whole seconds (JWT exp): the
	// stored signing time is ttl before it, to within the second.
	if d := stored.TokenAt.Add(ttl).Sub(again.ExpiresAt.Time); d < 0 || d >= time.Second || !stored.AdmittedAt.Equal(admitted) {
		t.Fatalf("stored token_at %v, admitted_at %v: want the new token's signing (it expires %v), the admission %v",
			stored.TokenAt, stored.AdmittedAt, again.ExpiresAt.Time, admitted)
	}
	newNoShow := stored.TokenAt.Add(ttl + grace)

	// A goes; the node loses its stream and comes back to B, which took
	// over, its viewer still on its way.
	n.stop()
	a.m.Close()
	waitFor(t, 20*testLeaderTTL, "B to take the planner lock", b.m.Leader)
	bn := b.registerWith("n1")
	if s := b.session(sid); s == nil || s.State != store.StateAdmitted {
		t.Fatalf("session %s on B after the takeover: %+v", sid, s)
	}
	waitFor(t, 5*time.Second, "B's ExpectCommand for the viewer on its way", func() bool { return len(bn.expected()) > 0 })
	if x := bn.expected()[0]; x.GetSessionId() != sid || x.GetUntilUnixMs() != newNoShow.UnixMilli() {
		t.Errorf("ExpectCommand from B %v, want session %s until the new token's no-show %v (the first's: %v)", x, sid, newNoShow, oldNoShow)
	}

	// Past the first token's no-show, well within the new token's.
	b.m.tick(oldNoShow.Add(time.Second))
	if b.session(sid) == nil {
		t.Fatalf("B ended the session at %v, past the first token's no-show (%v), while its new token's is %v",
			oldNoShow.Add(time.Second), oldNoShow, newNoShow)
	}
	// Past the new token's no-show: a no-show.
	b.m.tick(newNoShow.Add(time.Second))
	if b.session(sid) != nil {
		t.Fatalf("session still live on B at %v, past its new token's no-show %v", newNoShow.Add(time.Second), newNoShow)
	}
}
