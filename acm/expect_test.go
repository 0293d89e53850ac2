package acm

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// A viewer placed on a node is announced to it (ExpectCommand) with its
// admission session, its title and a deadline of its token's expiry
// plus NoShowGrace: for a title the node holds as for one it must fill;
// a new token for the same viewer (a second DESCRIBE on its connection)
// announces the same session again with the new token's deadline.
func TestAdmissionSendsExpect(t *testing.T) {
	const ttl, grace = 30 * time.Second, 7 * time.Second
	e := newManager(t, "", func(m *Manager) { m.TokenTTL, m.NoShowGrace = ttl, grace })
	n := e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:5541", titles: []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
	}})

	// check waits for the node's want-th ExpectCommand and checks it
	// against the token of the redirect res.
	check := func(what string, res *base.Response, title string, want int) string {
		t.Helper()
		if res.StatusCode != base.StatusFound {
			t.Fatalf("%s: DESCRIBE %d, want 302", what, res.StatusCode)
		}
		c := e.tokenOf(res.Header["Location"][0], "rtsp", "127.0.0.1:5541", title, "")
		waitFor(t, 5*time.Second, what+": the node's ExpectCommand", func() bool { return len(n.expected()) >= want })
		got := n.expected()
		if len(got) != want {
			t.Fatalf("%s: %d ExpectCommands, want %d: %v", what, len(got), want, got)
		}
		x := got[want-1]
		if x.GetSessionId() != c.Session || x.GetTitleId() != title {
			t.Fatalf("%s: expect %v, want session %s title %s", what, x, c.Session, title)
		}
		// The token's expiry is in whole seconds (JWT), cut from the
		// admission's instant plus TokenTTL.
		if d := time.UnixMilli(x.GetUntilUnixMs()).Sub(c.ExpiresAt.Time); d < grace || d >= grace+time.Second {
			t.Fatalf("%s: expect until %d ms, token expires %v: %v after, want NoShowGrace (%v) after the token's expiry",
				what, x.GetUntilUnixMs(), c.ExpiresAt.Time, d, grace)
		}
		return c.Session
	}

	rc := e.dialRTSP()
	first := check("title held", rc.mustDo(base.Describe, "/vod/t1", basicHeader("demo", "demo")), "t1", 1)
	again := check("same viewer, new token", rc.mustDo(base.Describe, "/vod/t1", basicHeader("demo", "demo")), "t1", 2)
	if again != first {
		t.Fatalf("second DESCRIBE on the connection: session %s, want the same session %s", again, first)
	}
	if s := check("title to fill", e.describe("demo", "demo", "t2"), "t2", 3); s == first {
		t.Fatalf("a new viewer's expect names the first viewer's session %s", s)
	}
}

// An ExpectCommand for a node whose command queue is half full
// (expectQueue) is dropped: admission never waits for a slow node, and
// the ExpectCommands of many admissions leave the rest of the queue to the
// commands that must get through (the manager's evictions, EndSessions).
func TestExpectDroppedWhenQueueFull(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{})
	m := e.m
	m.mu.Lock()
	defer m.mu.Unlock()
	ns := m.nodes["n1"]
	for i := range cmdQueue {
		s := &session{}
		s.ID, s.Title, s.Node = fmt.Sprint("sid-", i), "t1", "n1"
		m.expectLocked(ns, s, time.Now())
	}
	expects := len(ns.queue)
	if expects == 0 || expects > cmdQueue/2 {
		t.Fatalf("%d admissions to a node taking no command: %d ExpectCommands queued, want 1 to half the queue (%d)", cmdQueue, expects, cmdQueue/2)
	}
	for i := expects; i < cmdQueue; i++ {
		if !ns.push(evictCmd(fmt.Sprint("title-", i), evictOperator)) {
			t.Fatalf("evict %d refused: the queue is full of %d commands, %d of them ExpectCommands", i, len(ns.queue), expects)
		}
	}
	ns.queue = nil // the stream sends no test filler
}

// A node that registers again (restarted: it lost what it was told) is
// sent the ExpectCommands of its viewers still on their way, each with its
// first deadline.
func TestExpectSentAgainAtRegistration(t *testing.T) {
	e := newManager(t, "", nil)
	opts := nodeOpts{rtsp: "127.0.0.1:5541", titles: []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
	}}
	n := e.startNode("n1", opts)
	res := e.describe("demo", "demo", "t1")
	if res.StatusCode != base.StatusFound {
		t.Fatalf("DESCRIBE %d, want 302", res.StatusCode)
	}
	c := e.tokenOf(res.Header["Location"][0], "rtsp", "127.0.0.1:5541", "t1", "")
	waitFor(t, 5*time.Second, "the node's ExpectCommand", func() bool { return len(n.expected()) == 1 })
	first := n.expected()[0]

	n.stop() // the node dies; it comes back within restore_grace
	back := e.startNode("n1", opts)
	waitFor(t, 5*time.Second, "the ExpectCommand sent again", func() bool { return len(back.expected()) > 0 })
	got := back.expected()
	if len(got) != 1 || got[0].GetSessionId() != c.Session || got[0].GetTitleId() != "t1" || got[0].GetUntilUnixMs() != first.GetUntilUnixMs() {
		t.Fatalf("at its registration the node heard %v, want session %s of t1 until %d", got, c.Session, first.GetUntilUnixMs())
	}
}

// An admission undone before its redirect (its session not stored) tells
// its node nothing: its node would keep the title until the deadline for a
// viewer who is not coming. One whose redirect could not be delivered
// (abandon), whose node was told, has its node told that it ended.
func TestExpectNotLeftByUndoneAdmission(t *testing.T) {
	b, err := store.OpenBadger(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fs := &flakyStore{Store: b}
	e := newManager(t, "", func(m *Manager) { m.Store = fs })
	n := e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:5541", titles: []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
	}})
	fs.broken.Store(true)
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusServiceUnavailable {
		t.Fatalf("with a broken store: %d, want 503", res.StatusCode)
	}
	fs.broken.Store(false)
	// Ready again once the health check's write goes through.
	awaitProbe(t, e.m, "/healthz", http.StatusOK, "ok")
	res := e.describe("demo", "demo", "t1")
	if res.StatusCode != base.StatusFound {
		t.Fatalf("store back: %d, want 302", res.StatusCode)
	}
	c := e.tokenOf(res.Header["Location"][0], "rtsp", "127.0.0.1:5541", "t1", "")
	// Commands reach the node in order: the undone admission's would
	// come before this one's.
	waitFor(t, 5*time.Second, "the admitted viewer's ExpectCommand", func() bool { return len(n.expected()) > 0 })
	if got := n.expected(); len(got) != 1 || got[0].GetSessionId() != c.Session {
		t.Fatalf("the node heard %v, want only the expect of %s (the undone admission's none)", got, c.Session)
	}

	e.m.abandon(c.Session, "redirect not delivered")
	deadline := time.After(5 * time.Second)
	for {
		select {
		case cmd := <-n.cmds:
			if es := cmd.GetEndSessions(); es != nil && slices.Contains(es.GetSessionIds(), c.Session) {
				if es.GetRefuseUntilUnixMs() <= time.Now().UnixMilli() {
					t.Fatalf("end of the abandoned session refuses its token until %d, not after now", es.GetRefuseUntilUnixMs())
				}
				return
			}
		case <-deadline:
			t.Fatal("the node was not told that the abandoned session ended")
		}
	}
}
