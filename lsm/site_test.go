package lsm

import (
	"errors"
	"fmt"
	"testing"
	"time"
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

// Every policy (but dh, which keeps a title on its one node of the site)
// keeps a viewer of a site on that site's nodes while they can take it,
// even when another site's node holds the title or is less loaded; when
// they cannot, the viewer goes to another site's node (overflow), unless
// SiteOnly (refused: ErrNoCapacity). A request without a site goes
// anywhere.
func TestEveryPolicyKeepsViewersInTheirSite(t *testing.T) {
	for _, p := range Policies() {
		if p == "dh" {
			// A title's one node in the site: the north's second node
			// never takes "film" (TestSiteOnlyRefusesOnlyWhenTheSiteIsFull).
			continue
		}
		s := sitedScheduler(t, p)
		s.SetReplica("c", "film", false, 1) // held only in the south
		for i := range 5 {                  // 5 x 4 Mbit/s fill the south's node
			r := Request{Title: "film", Client: fmt.Sprint("s", i), Bitrate: 4e6, Site: "south"}
			res, err := s.Place(&r, t0)
			if err != nil || res.NodeID != "c" {
				t.Errorf("%s: south viewer %d: %+v %v, want c", p, i, res, err)
				break
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

// With SiteOnly a viewer is refused only when its own site's nodes are
// full (for dh: the title's node in the site, as dh refuses when its node
// is), under every policy: dh hashes a title among the site's nodes, and
// chbl's bound is the mean load of the site's nodes (with the cluster's
// mean, the south idle, chbl refused north viewers while the north had
// room; dh refused the titles it hashed to the south).
func TestSiteOnlyRefusesOnlyWhenTheSiteIsFull(t *testing.T) {
	for _, p := range Policies() {
		s := sitedScheduler(t, p)
		placed, refused := 0, false // a and b: 2 x 20 Mbit/s, 10 x 4 Mbit/s
		for i := 0; i < 100 && placed < 10; i++ {
			r := Request{Title: fmt.Sprint("title-", i), Client: fmt.Sprint("n", i), Bitrate: 4e6, Site: "north", SiteOnly: true}
			res, err := s.Place(&r, t0)
			if err == nil && res.NodeID != "c" {
				placed++
				continue
			}
			if dh, ok := s.policy.(*DestinationHashing); ok && err != nil {
				b := dh.sites["north\x00\x00"]
				if n := s.Nodes[b[r.TitleHash()%uint64(len(b))]]; n.Site == "north" && n.ReservedBps+4e6 > n.Capacity.EgressBps {
					continue // the title's north node is full
				}
			}
			t.Errorf("%s: north viewer %d with the north not full (%d placed): %+v %v", p, i, placed, res, err)
			refused = true
			break
		}
		if placed < 10 {
			if !refused {
				t.Errorf("%s: %d north viewers placed, want 10", p, placed)
			}
			continue
		}
		r := Request{Title: "title-x", Client: "late", Bitrate: 4e6, Site: "north", SiteOnly: true}
		if _, err := s.Place(&r, t0); !errors.Is(err, ErrNoCapacity) {
			t.Errorf("%s: north full: %v, want ErrNoCapacity", p, err)
		}
	}
}

// The table policies keep a title's node (lblc, lard) or set (lblcr,
// lard/r) per site, and dh a title's node per site: viewers of one title from two sites in turn do not
// move it back and forth, each site's viewers stay on the node that
// took the title's first one there (they were spread over the north by
// the wlc or least-utilized choice, a fill on every node).
func TestTablePoliciesKeepATitleInEachSite(t *testing.T) {
	for _, p := range []string{"lblc", "lblcr", "lard", "lard/r", "dh"} {
		s := sitedScheduler(t, p)
		north := ""
		for i := range 4 {
			r := Request{Title: "film", Client: fmt.Sprint("n", i), Bitrate: 2e6, Site: "north"}
			res, err := s.Place(&r, t0)
			if err != nil || res.NodeID == "c" || (north != "" && res.NodeID != north) {
				t.Errorf("%s: north viewer %d: %+v %v, want the north node of the first (%q)", p, i, res, err, north)
				break
			}
			north = res.NodeID
			r = Request{Title: "film", Client: fmt.Sprint("s", i), Bitrate: 2e6, Site: "south"}
			if res, err := s.Place(&r, t0); err != nil || res.NodeID != "c" {
				t.Errorf("%s: south viewer %d: %+v %v, want c", p, i, res, err)
				break
			}
		}
		// Past LBLCRShrink, again and again: a set shrinks, but a set over
		// both sites lost its most loaded member whatever its site, the
		// north's only one, whose next viewer filled the title on the
		// other north node.
		for i := range 4 {
			now := t0.Add(time.Duration(i+1) * (s.Config.LBLCRShrink + time.Second))
			r := Request{Title: "film", Client: fmt.Sprint("late-n", i), Bitrate: 2e6, Site: "north"}
			if res, err := s.Place(&r, now); err != nil || res.NodeID != north {
				t.Errorf("%s: north viewer %d after a shrink period: %+v %v, want %s", p, i, res, err, north)
				break
			}
			r = Request{Title: "film", Client: fmt.Sprint("late-s", i), Bitrate: 2e6, Site: "south"}
			if res, err := s.Place(&r, now); err != nil || res.NodeID != "c" {
				t.Errorf("%s: south viewer %d after a shrink period: %+v %v, want c", p, i, res, err)
				break
			}
		}
	}
}

// While a viewer's site has nodes that can take it, the overload tests of
// the table policies (lblc's "some node below half its threshold", lard's
// "some node below T_low") look at that site's nodes only: a title's
// loaded north node with the other north node busy too keeps the title,
// however idle the south is (moving it would only fill it again on the
// other, busy, north node).
func TestTablePoliciesJudgeOverloadWithinTheSite(t *testing.T) {
	for _, p := range []string{"lblc", "lblcr", "lard", "lard/r"} {
		s := sitedScheduler(t, p)
		r := Request{Title: "film", Client: "first", Bitrate: 1e6, Site: "north"}
		res, err := s.Place(&r, t0)
		if err != nil || res.NodeID == "c" {
			t.Fatalf("%s: first north viewer: %+v %v", p, res, err)
		}
		holder, other := s.Nodes[0], s.Nodes[1] // a and b
		if res.NodeID == "b" {
			holder, other = other, holder
		}
		// The holder at 0.95 (above lblc's 0.9 and lard's T_high 0.85,
		// below 2 T_high), the other north node at 0.5 (above half of 0.9
		// and above T_low 0.4), the south idle.
		holder.EgressBps, other.EgressBps = 19e6, 10e6
		r = Request{Title: "film", Client: "second", Bitrate: 1e6, Site: "north"}
		res, err = s.Place(&r, t0)
		if err != nil || res.NodeID != holder.ID {
			t.Errorf("%s: north viewer with its site busy: %+v %v, want the title's node %s", p, res, err, holder.ID)
		}
		// With the other north node idle, the title moves there (still
		// in the north).
		other.EgressBps = 0
		r = Request{Title: "film", Client: "third", Bitrate: 1e6, Site: "north"}
		if res, err = s.Place(&r, t0); err != nil || res.NodeID != other.ID {
			t.Errorf("%s: north viewer with the title's node overloaded and %s idle: %+v %v", p, other.ID, res, err)
		}
	}
}

// HoldersInServiceFor counts the holders in service a request may use:
// those of its site when it is kept there (SiteOnly), those offering what
// it requires, all of them otherwise; a drained holder is not counted.
func TestHoldersInServiceFor(t *testing.T) {
	s := sitedScheduler(t, "lall")
	s.SetReplica("a", "film", false, 1)
	s.SetReplica("c", "film", false, 1)
	for _, c := range []struct {
		r    Request
		want int
	}{
		{Request{Title: "film"}, 2},
		{Request{Title: "film", Site: "north"}, 2},
		{Request{Title: "film", Site: "north", SiteOnly: true}, 1},
		{Request{Title: "film", Site: "south", SiteOnly: true}, 1},
		{Request{Title: "film", Site: "west", SiteOnly: true}, 0},
		{Request{Title: "film", Requires: FeatureRTSPS}, 0},
		{Request{Title: "other"}, 0},
	} {
		if got := s.HoldersInServiceFor(&c.r); got != c.want {
			t.Errorf("%+v: %d holders, want %d", c.r, got, c.want)
		}
	}
	if err := s.SetWeight("c", 0); err != nil {
		t.Fatal(err)
	}
	if got := s.HoldersInServiceFor(&Request{Title: "film", Site: "south", SiteOnly: true}); got != 0 {
		t.Errorf("south's holder at weight 0: %d holders, want 0", got)
	}
}

// A viewer of a site whose nodes can take it only with a stale copy of the
// title (the one there holding the old version, the others unable to
// fill: no origin) goes to another site's node holding the current
// version, as a viewer its site cannot take at all: a stale copy plays
// only when no node can take the viewer otherwise. With SiteOnly it stays
// in its site, on the stale copy, rather than being refused. The site's
// stale copy was chosen before any other site was tried.
func TestStaleCopyOfTheSiteAfterTheCurrentVersionElsewhere(t *testing.T) {
	for _, policy := range Policies() {
		t.Run(policy, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Policy = policy
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []struct {
				id, site string
				noOrigin bool
			}{{"a", "north", false}, {"b", "south", true}, {"c", "south", true}} {
				if _, err := s.AddNode(NodeSpec{ID: n.id, Site: n.site, NoOrigin: n.noOrigin, Capacity: Capacity{EgressBps: 20e6}}, t0); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Heartbeat("a", Report{Titles: []Holding{{Title: "film", Bytes: 1e6}}}, t0); err != nil {
				t.Fatal(err)
			}
			if err := s.Heartbeat("b", Report{Titles: []Holding{{Title: "film", Bytes: 1e6, Stale: true}}}, t0); err != nil {
				t.Fatal(err)
			}
			r := Request{Title: "film", Client: "s1", Bitrate: 4e6, Bytes: 1e6, Site: "south"}
			res, err := s.Place(&r, t0)
			if err != nil || res.NodeID != "a" {
				t.Fatalf("south viewer: %+v %v, want a (the current version, in the north)", res, err)
			}
			only := Request{Title: "film", Client: "s2", Bitrate: 4e6, Bytes: 1e6, Site: "south", SiteOnly: true}
			if res, err := s.Place(&only, t0); err != nil || res.NodeID != "b" {
				t.Fatalf("site-only south viewer: %+v %v, want b (its site's stale copy)", res, err)
			}
			if r.restrict != "" || r.NoFill || r.noStale || only.restrict != "" || only.NoFill || only.noStale {
				t.Fatal("a try's restriction stays on the request")
			}
		})
	}
}
