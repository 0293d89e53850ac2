package acm

import (
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// heldStale reports whether the scheduler counts node's copy of title
// stale (confirmed by a catalog read since the manager's first sight).
func (e *env) heldStale(node, title string) bool {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	n := e.m.sched.Node(node)
	return n != nil && n.HoldsStale(title)
}

// The same viewer asking the front door again (an HTTP player, or a second
// DESCRIBE on one RTSP connection) before reaching its session's node,
// restarted without an origin with only a stale copy of the title (the
// title replaced at the origin since), is placed afresh on the node that
// has the current version; its earlier session ends (its reservation and
// its subscriber's slot freed). It was given a new token for the earlier
// session, and sent to the old version, which its node can never replace.
// An HTTP viewer already playing the stale copy (its node reported it
// STARTED) keeps its session: ending it would cut it.
func TestSameViewerNotSentBackToAStaleCopyOnANodeWithoutOrigin(t *testing.T) {
	current := func() []*pb.StoredTitle {
		return []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000, Version: "v2"}}
	}
	stale := func() []*pb.StoredTitle {
		return []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000, Version: "v1"}}
	}
	for _, proto := range []string{"http", "rtsp"} {
		t.Run(proto, func(t *testing.T) {
			e := newManagerWith(t, "", versioned(testTitles, "v2"), func(m *Manager) { m.MaxSessionsPerUser = 1 })
			addrs := map[string]string{"n1": "127.0.0.1:7031", "n2": "127.0.0.1:7032"}
			opts := func(id string, titles []*pb.StoredTitle) nodeOpts {
				if proto == "http" {
					return nodeOpts{http: addrs[id], titles: titles}
				}
				return nodeOpts{rtsp: addrs[id], titles: titles}
			}
			nodes := map[string]*fakeNode{}
			for id := range addrs {
				nodes[id] = e.startNode(id, opts(id, current()))
			}
			var c *rtspClient
			if proto == "rtsp" {
				c = e.dialRTSP()
			}
			// ask returns the session and node of the front door's redirect.
			ask := func(what string) (session, node string) {
				t.Helper()
				var loc, suffix string
				if proto == "http" {
					res := e.get("GET", "/vod/t1.ts", "demo", "demo")
					if res.StatusCode != http.StatusFound {
						t.Fatalf("%s: %d, want a redirect (limit 1: an ended session must not count)", what, res.StatusCode)
					}
					loc, suffix = res.Header.Get("Location"), ".ts"
				} else {
					res := c.mustDo(base.Describe, "/vod/t1", basicHeader("demo", "demo"))
					if res.StatusCode != base.StatusFound {
						t.Fatalf("%s: %d %q, want a redirect (limit 1: an ended session must not count)", what, res.StatusCode, res.StatusMessage)
					}
					loc = res.Header["Location"][0]
				}
				to, _ := redirectedTo(t, loc, proto, addrs)
				return e.tokenOf(loc, proto, addrs[to], "t1", suffix).Session, to
			}
			// restartStale restarts node id without an origin, its copy of
			// t1 the old version, and waits until the manager counts it
			// stale.
			restartStale := func(id string) {
				nodes[id].stop()
				o := opts(id, stale())
				o.noOrigin = true
				nodes[id] = e.startNode(id, o)
				waitFor(t, 5*time.Second, "the stale copy on "+id+" confirmed", func() bool { return e.heldStale(id, "t1") })
			}

			first, out := ask("first request")
			restartStale(out)
			again, on := ask("again, its node back without an origin and with a stale copy")
			if again == first || on == out {
				t.Fatalf("again: session %s on %s; want a new one, not the earlier %s on %s, which holds only a stale copy of t1 and has no origin", again, on, first, out)
			}
			if ids := e.sessionIDs(); len(ids) != 1 || ids[0] != again {
				t.Fatalf("sessions %v, want only the new %s", ids, again)
			}
			if got := e.reserved(out); got != 0 {
				t.Fatalf("%s still reserves %d bit/s for the earlier session", out, got)
			}
			if proto != "http" {
				return // an RTSP viewer's session is reused only before it plays
			}

			// Its viewer plays the stale copy: it keeps its session.
			restartStale(on)
			if err := nodes[on].event(again, pb.SessionEvent_KIND_STARTED); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 5*time.Second, "the session playing", func() bool {
				for _, s := range e.sessions() {
					if s.GetSessionId() == again {
						return s.GetState() == store.StatePlaying
					}
				}
				return false
			})
			if s, n := ask("again, playing the stale copy"); s != again || n != on {
				t.Fatalf("again while playing on %s: session %s on %s, want the same %s", on, s, n, again)
			}
		})
	}
}

// With sites, the same viewer placed afresh (its node, of its site,
// restarted without an origin with only a stale copy) goes to the node of
// another site that holds the current version, not back to the stale
// copy of its own site: a stale copy takes a viewer only when no node can
// otherwise. Placed afresh, it was sent back to the same stale copy (a new
// session there).
func TestSameViewerToTheCurrentVersionInAnotherSite(t *testing.T) {
	e := newManagerWith(t, "", versioned(testTitles, "v2"), func(m *Manager) {
		m.Sites = []Site{{Name: "north", Clients: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}}
	})
	v := func(version string) []*pb.StoredTitle {
		return []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000, Version: version}}
	}
	addrs := map[string]string{"north-1": "127.0.0.1:7041", "south-1": "127.0.0.1:7042"}
	north := e.startNode("north-1", nodeOpts{http: addrs["north-1"], site: "north", titles: v("v2")})
	e.startNode("south-1", nodeOpts{http: addrs["south-1"], site: "south", titles: v("v2")})
	ask := func(what string) (session, node string) {
		t.Helper()
		res := e.get("GET", "/vod/t1.ts", "demo", "demo")
		if res.StatusCode != http.StatusFound {
			t.Fatalf("%s: %d, want a redirect", what, res.StatusCode)
		}
		loc := res.Header.Get("Location")
		to, _ := redirectedTo(t, loc, "http", addrs)
		return e.tokenOf(loc, "http", addrs[to], "t1", ".ts").Session, to
	}
	first, on := ask("first request")
	if on != "north-1" {
		t.Fatalf("first request on %s, want north-1 (the viewer's site)", on)
	}
	north.stop()
	e.startNode("north-1", nodeOpts{http: addrs["north-1"], site: "north", titles: v("v1"), noOrigin: true})
	waitFor(t, 5*time.Second, "the stale copy on north-1 confirmed", func() bool { return e.heldStale("north-1", "t1") })
	again, on := ask("again")
	if again == first || on != "south-1" {
		t.Fatalf("again: session %s on %s, want a new one on south-1 (the current version), not on north-1's stale copy", again, on)
	}
}
