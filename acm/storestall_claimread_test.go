package acm

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"

	"vodcluster/acm/store"
)

// startNodePlaying is startNode (default options) for a node whose first
// report, and those after it, list sessions ids: it plays them.
func startNodePlaying(e *env, id string, ids ...string) *fakeNode {
	e.t.Helper()
	n := &fakeNode{t: e.t, id: id, nc: e.nc, cmds: make(chan *pb.NodeCommand, 64), diskFree: 1 << 40, sessions: ids}
	if _, err := e.nc.Register(context.Background(), regReq(id, "127.0.0.1:1", "127.0.0.1:7080", 10*titleBps)); err != nil {
		e.t.Fatal(err)
	}
	n.heartbeat()
	e.t.Cleanup(n.stop)
	waitFor(e.t, 5*time.Second, "the node's first report", func() bool { return e.reports(id) > 0 })
	return n
}

// settingsPastGate is a gatedRedis whose reads of the manager's state
// other than the health check's go past the gate: a node's registration
// reads its operator setting there, and the store stalls after it.
type settingsPastGate struct{ *gatedRedis }

func (g settingsPastGate) State(ctx context.Context, name string) ([]byte, error) {
	if name == stateHealthProbe {
		return g.gatedRedis.State(ctx, name)
	}
	return g.Redis.State(ctx, name)
}

// TestRetriedClaimOverTheEntryReadAtRegistration: a manager restored at
// its start a session whose entry names another manager; that manager
// rewrote the entry since (the session's node was with it), and the
// node then registers here, which reads the entry again and claims the
// session over it. The claim's write fails at a stalled store and waits
// for its return: it is then made (live), or the session ended here
// meanwhile has its entry deleted (ended), over the entry as the
// registration read it, which is unchanged. The claim was taken as
// made over the entry read at the start (its digest kept when the
// registration read the entry again, naming the same manager): the
// write was refused as over an entry rewritten since, and the session
// was left the other manager's (an ended one's entry stayed).
func TestRetriedClaimOverTheEntryReadAtRegistration(t *testing.T) {
	for _, then := range []string{"live", "ended"} {
		t.Run(then, func(t *testing.T) {
			var log lockedLog
			prev := store.Session{ID: "0123456789abcdef0123456789abcdef", User: "demo", Title: "t1", Node: "n1", BitrateBps: titleBps,
				State: store.StatePlaying, Protocol: store.ProtoRTSP, AdmittedAt: time.Now(), Manager: "previous-manager"}
			e, g, r := gatedManager(t, 300*time.Millisecond, func(m *Manager) {
				m.Logger = slog.New(slog.NewTextHandler(&log, nil))
				m.Store = settingsPastGate{m.Store.(*gatedRedis)}
				// Restored at the start (the manager leads).
				if err := m.Store.PutSession(context.Background(), prev); err != nil {
					t.Fatal(err)
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			e.m.mu.Lock()
			restored := e.m.sessions[prev.ID] != nil
			e.m.mu.Unlock()
			if !restored {
				t.Fatal("the session was not restored at the start")
			}
			prev.ClientAddr = "192.0.2.7:5000" // the previous manager's write since
			if err := r.PutSession(ctx, prev); err != nil {
				t.Fatal(err)
			}
			g.shut()
			t.Cleanup(g.open)
			if then == "live" {
				startNodePlaying(e, "n1", prev.ID)
			} else {
				e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"}) // its first report ends the session
			}
			e.m.mu.Lock()
			s := e.m.sessions[prev.ID]
			_, waiting := e.m.pendingWrites[prev.ID]
			e.m.mu.Unlock()
			if !waiting || (then == "live") != (s != nil) {
				t.Fatalf("the claim's write waiting for the store's return: %v; in the table: %v", waiting, s != nil)
			}
			g.open()
			waitRetried(t, &log)
			got, err := r.Session(ctx, prev.ID)
			switch {
			case then == "ended" && !errors.Is(err, store.ErrNotFound):
				t.Fatalf("the claimed session ended: its entry %+v %v, want it deleted", got, err)
			case then == "live" && (err != nil || got.Manager != e.m.holderID()):
				t.Fatalf("the claimed session's entry: manager %q, %v; want %q", got.Manager, err, e.m.holderID())
			}
		})
	}
}
