package lsm

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// RefuseNoSource finishes the waiting requests that NoSource holds for
// (here: the node with an origin drained while they waited) with the
// error given, and keeps the others in order: one for a title the node
// without an origin holds, and one not kept to its site.
func TestRefuseNoSource(t *testing.T) {
	s := noOriginSched(t, DefaultPolicy)
	grace := t0.Add(-30 * time.Second)
	if _, err := s.Place(&Request{Title: "a", Client: "c", Bitrate: 1e9}, t0); err != nil {
		t.Fatal(err) // full is full
	}
	north := func(title string) Request {
		return Request{Title: title, Client: "c", Bitrate: 11e9, Site: "north", SiteOnly: true} // more than bare's egress
	}
	var tks []*Ticket
	for _, r := range []Request{north("new"), north("held"), {Title: "new", Client: "c", Bitrate: 1e9}, north("half")} {
		tk, err := s.Admit(r, t0.Add(time.Minute), t0)
		if err != nil || tk.Done {
			t.Fatalf("%+v: %+v %v, want queued", r, tk, err)
		}
		tks = append(tks, tk)
	}
	errGone := errors.New("no source")
	if got := s.RefuseNoSource(grace, errGone); len(got) != 2 || got[0] != tks[0] || got[1] != tks[3] || tks[0].Err != errGone || tks[3].Err != errGone {
		t.Fatalf("refused %v, want the requests kept to north of titles bare lacks", got)
	}
	if s.Queued() != 2 || tks[1].Done || tks[2].Done {
		t.Fatalf("queued %d, held done %v, any-site done %v", s.Queued(), tks[1].Done, tks[2].Done)
	}
	s.SetDraining("full", true)
	if got := s.RefuseNoSource(grace, errGone); len(got) != 1 || got[0] != tks[2] {
		t.Fatalf("full drained: refused %v, want the request not kept to a site", got)
	}
	if s.Queued() != 1 || tks[1].Done {
		t.Fatal("the request for the title bare holds was refused")
	}
	// Without a node lacking an origin nothing is refused.
	plain := sched(t, DefaultPolicy, nil, 1e6)
	tk, _ := plain.Admit(Request{Title: "x", Client: "c", Bitrate: 1e9}, t0.Add(time.Minute), t0)
	if got := plain.RefuseNoSource(grace, errGone); len(got) != 0 || tk.Done {
		t.Fatalf("no node without an origin: refused %v", got)
	}
}

// dh, kept to a site, moves a title that hashes to the site's node
// without an origin (which lacks it) to a node of that site with one,
// also when every fallback probe of the table lands on the node without
// an origin: its walk in index order passes over the nodes of other
// sites, which the site's table is not over (it took the first node in
// service, of another site, and refused the viewer).
func TestDHFallbackStaysInTheSite(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Policy = "dh"
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []NodeSpec{
		{ID: "bare", Capacity: Capacity{EgressBps: 1e9, DiskBytes: 1e12}, Site: "north", NoOrigin: true},
		{ID: "south", Capacity: Capacity{EgressBps: 1e9, DiskBytes: 1e12}, Site: "south"},
		{ID: "north", Capacity: Capacity{EgressBps: 1e9, DiskBytes: 1e12}, Site: "north"},
	} {
		if _, err := s.AddNode(n, t0); err != nil {
			t.Fatal(err)
		}
	}
	table := buildBuckets(s, bucketCount(len(s.Nodes)), false, "north", 0, nil)
	m := uint64(len(table))
	probes := min(m, uint64(2*len(s.Nodes)+8))
	allBare := func(h uint64) bool {
		if table[h%m] != 0 {
			return false
		}
		for k := uint64(1); k <= probes; k++ {
			if table[mix64(h+k)%m] != 0 {
				return false
			}
		}
		return true
	}
	title := ""
	for i := 0; i < 1<<22 && title == ""; i++ { // about one title in 2^15 qualifies
		if c := fmt.Sprint("x", i); allBare(hash64(c)) {
			title = c
		}
	}
	if title == "" {
		t.Fatal("no title whose every probe lands on the node without an origin")
	}
	res, err := s.Place(&Request{Title: title, Client: "c", Bitrate: 1e6, Site: "north", SiteOnly: true}, t0)
	if err != nil || res.NodeID != "north" {
		t.Fatalf("%s kept to north: %+v %v, want the north node with an origin", title, res, err)
	}
	res, err = s.Place(&Request{Title: title, Client: "c", Bitrate: 1e6, Site: "north"}, t0)
	if err != nil || res.NodeID != "north" {
		t.Fatalf("%s tried at north first: %+v %v, want the north node with an origin", title, res, err)
	}
}

// lblc(r) and lard(/r) move a title off its busy node only when some node below
// their low mark could take it: an idle node without an origin, which
// lacks the title, is no such node (it made them move the title to
// another busy node, with a fill there).
func TestIdleNodeWithoutOriginMovesNoTitle(t *testing.T) {
	for _, c := range []struct {
		policy string
		load   int64 // bit/s reserved on the title's node: above the policy's high mark
	}{{"lblc", 940e6}, {"lblcr", 940e6}, {"lard", 900e6}, {"lard/r", 900e6}} {
		cfg := DefaultConfig()
		cfg.Policy = c.policy
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []NodeSpec{
			{ID: "a", Capacity: Capacity{EgressBps: 1e9, DiskBytes: 1e12}},
			{ID: "b", Capacity: Capacity{EgressBps: 1e9, DiskBytes: 1e12}},
			{ID: "bare", Capacity: Capacity{EgressBps: 1e9, DiskBytes: 1e12}, NoOrigin: true},
		} {
			if _, err := s.AddNode(n, t0); err != nil {
				t.Fatal(err)
			}
		}
		res, err := s.Place(&Request{Title: "t", Client: "c", Bitrate: 10e6}, t0)
		if err != nil || res.NodeID != "a" {
			t.Fatalf("%s: first viewer: %+v %v, want a", c.policy, res, err)
		}
		if _, err := s.Reserve("a", "x", c.load); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Reserve("b", "y", 600e6); err != nil { // above half the overload threshold and T_low
			t.Fatal(err)
		}
		res, err = s.Place(&Request{Title: "t", Client: "c", Bitrate: 10e6}, t0)
		if err != nil || res.NodeID != "a" || res.Fill {
			t.Errorf("%s: second viewer: %+v %v, want a, the title's node (b is busy too, bare cannot fill)", c.policy, res, err)
		}
	}
}
