package lsm

import (
	"errors"
	"fmt"
	"testing"
)

// sitedScheduler has nodes a and b in site "north", c in "south", each of
// 20 Mbit/s, under policy.
func sitedScheduler(t *testing.T, policy string) *Scheduler {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Policy = policy
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []struct{ id, site string }{{"a", "north"}, {"b", "north"}, {"c", "south"}} {
		if _, err := s.AddNode(NodeSpec{ID: n.id, Site: n.site, Capacity: Capacity{EgressBps: 20e6}}, t0); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// Every policy (but dh, which keeps a title on its one node, and chbl,
// whose bound is the cluster's) keeps a viewer of a site on that site's nodes while they
// can take it, even when another site's node holds the title or is less
// loaded; when they cannot, the viewer goes to another site's node
// (overflow), unless SiteOnly (refused: ErrNoCapacity). A request without
// a site goes anywhere.
func TestEveryPolicyKeepsViewersInTheirSite(t *testing.T) {
	for _, p := range Policies() {
		switch p {
		case "chbl":
			// Its bound is c times the cluster's average load: the
			// south's only node is passed over above it, and its viewers
			// overflow to the north sooner (documented).
			continue
		case "dh":
			// A title's one node whatever the site (documented).
			continue
		}
		s := sitedScheduler(t, p)
		s.SetReplica("c", "film", false, 1) // held only in the south
		for i := range 5 {                  // 5 x 4 Mbit/s fill the south's node
			r := Request{Title: "film", Client: fmt.Sprint("s", i), Bitrate: 4e6, Site: "south"}
			res, err := s.Place(&r, t0)
			if err != nil || res.NodeID != "c" {
				t.Fatalf("%s: south viewer %d: %+v %v, want c", p, i, res, err)
			}
		}
		for i := range 10 { // the north's two nodes take 10
			r := Request{Title: "film", Client: fmt.Sprint("n", i), Bitrate: 4e6, Site: "north"}
			res, err := s.Place(&r, t0)
			if err != nil || res.NodeID == "c" {
				t.Fatalf("%s: north viewer %d: %+v %v, want a or b", p, i, res, err)
			}
		}
		// The north is full: a north viewer who must stay there is
		// refused; south's node is full too, so overflow finds nothing.
		r := Request{Title: "film", Client: "late", Bitrate: 4e6, Site: "north", SiteOnly: true}
		if _, err := s.Place(&r, t0); !errors.Is(err, ErrNoCapacity) {
			t.Fatalf("%s: site-only viewer with its site full: %v", p, err)
		}
	}
}

func TestSiteOverflowAndNoSite(t *testing.T) {
	s := sitedScheduler(t, "lall")
	for i := range 5 {
		r := Request{Title: "film", Client: fmt.Sprint("s", i), Bitrate: 4e6, Site: "south"}
		if res, err := s.Place(&r, t0); err != nil || res.NodeID != "c" {
			t.Fatalf("south viewer %d: %+v %v", i, res, err)
		}
	}
	// The south is full: the next south viewer overflows to the north,
	// or is refused when it must stay.
	only := Request{Title: "film", Client: "x", Bitrate: 4e6, Site: "south", SiteOnly: true}
	if _, err := s.Place(&only, t0); !errors.Is(err, ErrNoCapacity) {
		t.Fatalf("site-only with the site full: %v", err)
	}
	over := Request{Title: "film", Client: "y", Bitrate: 4e6, Site: "south"}
	if res, err := s.Place(&over, t0); err != nil || res.NodeID == "c" {
		t.Fatalf("overflow: %+v %v", res, err)
	}
	// A site no node is in: every node, as without a site.
	none := Request{Title: "film", Client: "z", Bitrate: 4e6, Site: "west"}
	if res, err := s.Place(&none, t0); err != nil {
		t.Fatalf("unknown site: %+v %v", res, err)
	}
	if over.restrict != "" || none.restrict != "" {
		t.Fatal("the first try's restriction stays on the request")
	}
}
