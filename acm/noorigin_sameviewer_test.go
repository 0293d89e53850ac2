package acm

import (
	"net/http"
	"testing"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	pb "vodcluster/proto/vodcluster/v1"
)

// heldT1 is t1 complete on a node's disk.
func heldT1() []*pb.StoredTitle {
	return []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}
}

// The same viewer asking the front door again (an HTTP player, or a second
// DESCRIBE on one RTSP connection) while its session's node, restarted
// without an origin, no longer holds the title is placed afresh on the
// node that has it; its earlier session ends (its reservation and its
// subscriber's slot freed). It was given a new token
// for the earlier session, and sent to a node that can neither play the
// title nor fetch it. A node restarted without an origin that still holds
// the title complete gets the same viewer back, on its earlier session.
func TestSameViewerNotSentBackToANodeWithoutOriginLackingTheTitle(t *testing.T) {
	for _, proto := range []string{"http", "rtsp"} {
		t.Run(proto, func(t *testing.T) {
			e := newManager(t, "", func(m *Manager) { m.MaxSessionsPerUser = 1 })
			addrs := map[string]string{"n1": "127.0.0.1:7021", "n2": "127.0.0.1:7022"}
			opts := func(id string) nodeOpts {
				if proto == "http" {
					return nodeOpts{http: addrs[id]}
				}
				return nodeOpts{rtsp: addrs[id]}
			}
			nodes := map[string]*fakeNode{}
			for id := range addrs {
				o := opts(id)
				o.titles = heldT1()
				nodes[id] = e.startNode(id, o)
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
			restart := func(id string, o nodeOpts) {
				nodes[id].stop()
				o.noOrigin = true
				nodes[id] = e.startNode(id, o)
			}

			first, out := ask("first request")
			restart(out, opts(out)) // its disk without t1
			again, on := ask("again, its node back without an origin and without t1")
			if again == first || on == out {
				t.Fatalf("again: session %s on %s; want a new one, not the earlier %s on %s, which lacks t1 and has no origin", again, on, first, out)
			}
			if ids := e.sessionIDs(); len(ids) != 1 || ids[0] != again {
				t.Fatalf("sessions %v, want only the new %s", ids, again)
			}
			if got := e.reserved(out); got != 0 {
				t.Fatalf("%s still reserves %d bit/s for the earlier session", out, got)
			}

			// Back without an origin but with t1 complete: the same session.
			o := opts(on)
			o.titles = heldT1()
			restart(on, o)
			if s, n := ask("again, its node back without an origin, with t1"); s != again || n != on {
				t.Fatalf("again with t1 on %s: session %s on %s, want the same %s", on, s, n, again)
			}
		})
	}
}
