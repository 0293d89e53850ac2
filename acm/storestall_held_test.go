package acm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"vodcluster/acm/store"
)

// waitRetriesEnded waits until the manager's log says its waiting
// session writes were made (retryWrites) or stopped at a failure.
func waitRetriesEnded(t *testing.T, log *lockedLog) {
	t.Helper()
	waitFor(t, 10*time.Second, "the waiting session writes made or stopped", func() bool {
		s := log.String()
		return strings.Contains(s, "after the store's return") || strings.Contains(s, "sessions' writes stopped")
	})
}

// TestRetriesSkipAnUndecodableEntry: of the deletes waiting for the
// store's return, one is of a session whose entry the store cannot
// decode (not a JSON session: its manager cannot be told). That one is
// left as is and logged once, and the others are made; it stopped every
// retry (all of them waiting for the next check) until an operator
// removed the entry, and took the store as unavailable meanwhile.
func TestRetriesSkipAnUndecodableEntry(t *testing.T) {
	var log lockedLog
	e, g, r := gatedManager(t, 300*time.Millisecond, func(m *Manager) {
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	const bad, garbled = "0123456789abcdef0123456789abcdef", `{"id":"0123456789abcdef","manager":`
	if err := g.srv.Client(t).HSet(ctx, r.Prefix()+"sessions", bad, garbled).Err(); err != nil {
		t.Fatal(err)
	}
	e.m.retryLater(nil, store.Session{ID: bad, Manager: e.m.holderID()})
	for i := range 10 {
		s := store.Session{ID: fmt.Sprintf("ended-%02d", i), User: "demo", Title: "t1", Node: "n1", State: store.StateAdmitted,
			Protocol: store.ProtoRTSP, AdmittedAt: time.Now(), Manager: e.m.holderID()}
		if err := r.PutSession(ctx, s); err != nil {
			t.Fatal(err)
		}
		e.m.retryLater(nil, s)
	}
	e.m.noteStall() // the health check reads the store now: it answers
	waitRetriesEnded(t, &log)
	if n := strings.Count(log.String(), "its write not tried again"); n != 1 {
		t.Fatalf("the undecodable entry logged %d times, want once:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "deleted=10 written=0 left=0 others=0 skipped=1") {
		t.Fatalf("the other deletes not all made:\n%s", log.String())
	}
	ss, err := g.srv.Client(t).HGetAll(ctx, r.Prefix()+"sessions").Result()
	if err != nil || len(ss) != 1 || ss[bad] != garbled {
		t.Fatalf("the store's entries after the retries: %v %v, want the undecodable one alone, as it was", ss, err)
	}
	e.m.mu.Lock()
	left := len(e.m.pendingWrites)
	e.m.mu.Unlock()
	if left != 0 || e.m.health.storeDown.Load() {
		t.Fatalf("after the retries: %d writes waiting, store taken as unavailable %v; want none, false", left, e.m.health.storeDown.Load())
	}
	if _, err := r.Session(ctx, bad); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the undecodable entry read: %v, want a decoding error", err)
	}
}

// TestRetriedClaimSparesAnEntryRewrittenSince: a manager taking over
// claims a session of the previous manager, and the claim's write waits
// for a stalled store's return; meanwhile the previous manager rewrites
// its entry (the session's node is back with it and plays it on). When
// the store answers, the waiting claim (live), or the delete of the
// claimed session ended here meanwhile (ended), leaves that entry alone:
// it is the previous manager's again, no longer the one claimed over.
// The claim was made over any entry naming the previous manager, and
// took the session back from it.
func TestRetriedClaimSparesAnEntryRewrittenSince(t *testing.T) {
	for _, then := range []string{"live", "ended"} {
		t.Run(then, func(t *testing.T) {
			var log lockedLog
			e, g, r := gatedManager(t, 300*time.Millisecond, func(m *Manager) {
				m.Logger = slog.New(slog.NewTextHandler(&log, nil))
			})
			n := e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
			s, prev := stalledClaim(t, e, g, r, n)
			if then == "ended" {
				endAndPersist(e, s)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			rewritten := prev
			rewritten.ClientAddr = "192.0.2.7:5000" // the previous manager's new write (its store is not gated)
			if err := r.PutSession(ctx, rewritten); err != nil {
				t.Fatal(err)
			}
			g.open()
			waitRetried(t, &log)
			got, err := r.Session(ctx, prev.ID)
			if err != nil || got.Manager != "previous-manager" || got.ClientAddr != rewritten.ClientAddr {
				t.Fatalf("the entry the previous manager rewrote: %+v %v, want it kept", got, err)
			}
		})
	}
}
