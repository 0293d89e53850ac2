package acm

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"vodcluster/acm/boss"
	"vodcluster/acm/store"
)

// TestManagersLoadAroundAnUndecodableSession: two managers share one
// Redis whose sessions hash holds, among A's sessions, an entry that is
// not a session's JSON (written by hand). B, starting as a standby over
// it ("start") or finding it only at its takeover ("takeover"), takes
// over from A, loads A's sessions, takes the node's registration with
// their reservations and admits; the entry is logged once, with the HDEL
// that removes it, through the three listings (B's Start, its takeover,
// the node's registration), and left as is. A manager started afterwards
// over the store (a restart) loads the sessions too. One such entry
// failed B's Start, and its takeover's load and every registration of a
// node (UNAVAILABLE), until an operator removed it.
func TestManagersLoadAroundAnUndecodableSession(t *testing.T) {
	const bad, garbled = "0123456789abcdef0123456789abcdef", `{"id":"0123456789abcdef0123456789abcdef","node":"n1","manager":`
	for _, when := range []string{"start", "takeover"} {
		t.Run(when, func(t *testing.T) {
			open, srv := sharedRedis(t)
			stA, stB := open(), open()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			garble := func() {
				if err := srv.Client(t).HSet(ctx, stA.Prefix()+"sessions", bad, garbled).Err(); err != nil {
					t.Fatal(err)
				}
			}
			const grace = time.Minute // no session ends for its node's absence here
			a := newManager(t, "", onShared(stA, &countPlanner{}, grace))
			n := a.startNode("n1", nodeOpts{})
			sid1, sid2 := a.admitOne("t1"), a.admitOne("t2")
			if when == "start" {
				garble()
			}
			var log lockedLog
			b := newManager(t, "", func(m *Manager) {
				onShared(stB, &countPlanner{}, grace)(m)
				m.Logger = slog.New(slog.NewTextHandler(&log, nil))
			})
			if b.m.Leader() {
				t.Fatal("the second manager took a held lock")
			}
			if when == "takeover" {
				garble()
			}
			n.stop()
			a.m.Close()
			waitFor(t, 20*testLeaderTTL, "B to take the planner lock", b.m.Leader)
			if !strings.Contains(log.String(), "sessions_loaded=2") {
				t.Fatalf("B's takeover did not load A's two sessions:\n%s", log.String())
			}
			b.registerWith("n1", sid1, sid2)
			for _, id := range []string{sid1, sid2} {
				if s := b.session(id); s == nil || s.NodeId != "n1" {
					t.Fatalf("session %s on B after the takeover: %+v", id, s)
				}
			}
			if got := b.reserved("n1"); got != 2*titleBps {
				t.Fatalf("reserved on n1 after the registration: %d, want %d", got, 2*titleBps)
			}
			sid3 := b.admitOne("t3")
			if got := b.reserved("n1"); got != 3*titleBps || !inStore(t, stB, sid3) {
				t.Fatalf("after a new admission on B: reserved %d, stored %v", got, inStore(t, stB, sid3))
			}
			lines := 0
			for _, l := range strings.Split(log.String(), "\n") {
				if strings.Contains(l, "does not decode") {
					lines++
					want := `remove="HDEL ` + stB.Prefix() + "sessions " + bad + `"`
					if !strings.Contains(l, "session="+bad) || !strings.Contains(l, want) {
						t.Errorf("log line %q, want session=%s and %s", l, bad, want)
					}
				}
			}
			if lines != 1 {
				t.Fatalf("the undecodable entry logged %d times, want once:\n%s", lines, log.String())
			}
			if got, err := srv.Client(t).HGet(ctx, stB.Prefix()+"sessions", bad).Result(); err != nil || got != garbled {
				t.Fatalf("the undecodable entry: %q %v, want it left as is", got, err)
			}
			if when == "takeover" {
				return
			}
			// B stops (releasing the lock); a manager starts over the store.
			b.m.Close()
			c := newManager(t, "", onShared(open(), &countPlanner{}, grace))
			if !c.m.Leader() {
				t.Fatal("the manager started on a released lock is not the leader")
			}
			for _, id := range []string{sid1, sid2, sid3} {
				if s := c.session(id); s == nil || s.NodeId != "n1" {
					t.Fatalf("session %s after the restart: %+v", id, s)
				}
			}
			c.registerWith("n1", sid1, sid2, sid3)
			if got := c.reserved("n1"); got != 3*titleBps {
				t.Fatalf("reserved on n1 after the restart: %d, want %d", got, 3*titleBps)
			}
			c.admitOne("t1")
			if got := c.reserved("n1"); got != 4*titleBps {
				t.Fatalf("reserved on n1 after an admission: %d, want %d", got, 4*titleBps)
			}
		})
	}
}

// TestStartRefusesAnUndecodableTitle: a manager does not start over a
// stored catalog one of whose entries is not a title's JSON (its origin
// down): its error names the title and the HDEL that removes the entry
// (store.ErrUndecodable), rather than the title being left out unseen
// (unknown to its viewers until the origin answers). Once the entry is
// removed, it starts with the rest of the catalog.
func TestStartRefusesAnUndecodableTitle(t *testing.T) {
	open, srv := sharedRedis(t)
	st := open()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := st.ReplaceTitles(ctx, []store.Title{{ID: "t1", BitrateBps: titleBps}, {ID: "t2", BitrateBps: titleBps}}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Client(t).HSet(ctx, st.Prefix()+"titles", "t2", `{"id":"t2","bitrate_bps":`).Err(); err != nil {
		t.Fatal(err)
	}
	start := func() (*Manager, error) {
		users, err := boss.NewFile(DefaultRealm, testUsers())
		if err != nil {
			t.Fatal(err)
		}
		m := &Manager{RTSPListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", GRPCListen: "127.0.0.1:0",
			DataDir: t.TempDir(), Secret: testSecret, BOSS: users, Logger: testLogger(t), Store: st, LeaderTTL: testLeaderTTL}
		err = m.Start()
		if err == nil {
			t.Cleanup(func() { m.Close() })
		}
		return m, err
	}
	hdel := "HDEL " + st.Prefix() + "titles t2"
	if _, err := start(); !errors.Is(err, store.ErrUndecodable) || !strings.Contains(err.Error(), "title t2") || !strings.Contains(err.Error(), hdel) {
		t.Fatalf("Start over an undecodable title: %v, want ErrUndecodable naming t2 and %q", err, hdel)
	}
	if err := srv.Client(t).HDel(ctx, st.Prefix()+"titles", "t2").Err(); err != nil {
		t.Fatal(err)
	}
	m, err := start()
	if err != nil {
		t.Fatalf("Start once the entry is removed: %v", err)
	}
	if c := m.titles(); len(c) != 1 || c["t1"].ID != "t1" {
		t.Fatalf("catalog after the start: %v, want t1", c)
	}
}
