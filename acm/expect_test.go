package acm

import (
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

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

// An ExpectCommand for a node whose command queue is full is dropped:
// admission never waits for a slow node.
func TestExpectDroppedWhenQueueFull(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{})
	m := e.m
	m.mu.Lock()
	defer m.mu.Unlock()
	ns := m.nodes["n1"]
	for len(ns.queue) < cmdQueue {
		ns.queue = append(ns.queue, drainCmd(false))
	}
	s := &session{}
	s.ID, s.Title, s.Node = "sid-1", "t1", "n1"
	m.expectLocked(ns, s, time.Now())
	if len(ns.queue) != cmdQueue {
		t.Fatalf("queue of %d commands, want %d", len(ns.queue), cmdQueue)
	}
	for _, c := range ns.queue {
		if c.GetExpect() != nil {
			t.Fatal("expect queued past cmdQueue")
		}
	}
	ns.queue = nil // the stream sends no test filler
}
