package lsm

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"
)

// sched builds a scheduler with nodes a, b, c, ... of the given egress
// bit/s, all joined at t0 (no slow start).
func sched(t *testing.T, policy string, mutate func(*Config), bps ...int64) *Scheduler {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Policy = policy
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range bps {
		if _, err := s.AddNode(NodeSpec{ID: string(rune('a' + i)), Capacity: Capacity{EgressBps: b}}, t0); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// place places a request and returns the node id, or "" with the error.
func place(t *testing.T, s *Scheduler, title, client string, bps int64) (string, Reservation) {
	t.Helper()
	r := Request{Title: title, Client: client, Bitrate: bps}
	res, err := s.Place(&r, t0)
	if err != nil {
		return "", res
	}
	return res.NodeID, res
}

func seq(t *testing.T, s *Scheduler, n int, title func(int) string, bps int64) string {
	t.Helper()
	var out []string
	for i := 0; i < n; i++ {
		id, _ := place(t, s, title(i), fmt.Sprint("c", i), bps)
		if id == "" {
			id = "-"
		}
		out = append(out, id)
	}
	return strings.Join(out, "")
}

func same(string) func(int) string { return func(int) string { return "film" } }
func each(i int) string            { return fmt.Sprint("t", i) }

func TestRRTurnsAndSkipsDrained(t *testing.T) {
	s := sched(t, "rr", nil, 1e9, 1e9, 1e9)
	if got := seq(t, s, 4, each, 1e6); got != "abca" {
		t.Fatalf("rr = %s, want abca", got)
	}
	s.SetDraining("c", true)
	if got := seq(t, s, 3, each, 1e6); got != "bab" {
		t.Fatalf("rr with c drained = %s, want bab", got)
	}
}

func TestWRRSharesByCapacityAndWeight(t *testing.T) {
	s := sched(t, "wrr", nil, 2e9, 1e9)
	if got := seq(t, s, 6, each, 1e6); got != "abaaba" {
		t.Fatalf("wrr = %s, want abaaba (2:1 smooth)", got)
	}
	s.SetWeight("b", 200) // b: 1 Gbit/s at weight 200 = a
	if got := seq(t, s, 4, each, 1e6); strings.Count(got, "a") != 2 {
		t.Fatalf("wrr equal weights = %s", got)
	}
}

func TestLCFewestSessionsIgnoresCapacity(t *testing.T) {
	s := sched(t, "lc", nil, 10e9, 1e9)
	if got := seq(t, s, 4, each, 1e6); got != "abab" {
		t.Fatalf("lc = %s, want abab", got)
	}
}

func TestWLCSessionsPerWeight(t *testing.T) {
	s := sched(t, "wlc", nil, 3e9, 1e9)
	got := seq(t, s, 40, each, 1e6)
	if strings.Count(got, "a") != 30 || got[:2] != "ab" {
		t.Fatalf("wlc = %s, want 30 a of 40 starting ab", got)
	}
}

func TestSEDAndNQ(t *testing.T) {
	s := sched(t, "sed", nil, 3e9, 1e9)
	// (n+1)/w: a 1/30 < b 1/10; 2/30 < 0.1; 3/30 = 0.1 ties to a; 4/30 > 0.1.
	if got := seq(t, s, 4, each, 1e6); got != "aaab" {
		t.Fatalf("sed = %s, want aaab", got)
	}
	s = sched(t, "nq", nil, 3e9, 1e9)
	// An idle node first (b after a), then sed: a 2/30, b 2/10...
	if got := seq(t, s, 4, each, 1e6); got != "abaa" {
		t.Fatalf("nq = %s, want abaa", got)
	}
}

func TestLBLCStickyThenMovesWhenOverloaded(t *testing.T) {
	s := sched(t, "lblc", nil, 100e6, 100e6)
	first, _ := place(t, s, "film", "x", 10e6)
	for i := 0; i < 8; i++ {
		if id, _ := place(t, s, "film", "x", 10e6); id != first {
			t.Fatalf("request %d went to %s, title's node is %s", i, id, first)
		}
	}
	// first is at 90%; one more takes it to 100% > 90% while the other is
	// idle (below 45%): lblc moves the title.
	if id, _ := place(t, s, "film", "x", 10e6); id != first {
		t.Fatalf("at 90%% (not above) the title must stay, went to %s", id)
	}
	if id, _ := place(t, s, "film", "x", 1e6); id == first || id == "" {
		t.Fatalf("overloaded node kept the title: %s", id)
	}
	other, _ := place(t, s, "film", "x", 1e6)
	if other == first {
		t.Fatal("table not updated to the new node")
	}
}

func TestLBLCRGrowsAndShrinksItsSet(t *testing.T) {
	s := sched(t, "lblcr", func(c *Config) { c.LBLCRShrink = time.Minute }, 100e6, 100e6)
	p := s.Policy().(*LBLCR)
	for i := 0; i < 10; i++ {
		place(t, s, "film", "x", 10e6) // fills the first node to 100%
	}
	id, _ := place(t, s, "film", "x", 1e6)
	set := p.table["film"]
	if len(set.nodes) != 2 || id == "" {
		t.Fatalf("set %v after overload, placed on %q", set.nodes, id)
	}
	// Unchanged for longer than LBLCRShrink: the most loaded member goes.
	later := t0.Add(2 * time.Minute)
	r := Request{Title: "film", Bitrate: 1e6}
	if _, err := s.Place(&r, later); err != nil {
		t.Fatal(err)
	}
	if len(set.nodes) != 1 || s.Nodes[set.nodes[0]].ReservedBps > 10e6 {
		t.Fatalf("set after shrink: %v", set.nodes)
	}
}

func TestDHStableAndRefusesWhenItsNodeIsFull(t *testing.T) {
	s := sched(t, "dh", nil, 10e6, 10e6, 10e6)
	home, _ := place(t, s, "film", "x", 5e6)
	if id, _ := place(t, s, "film", "y", 5e6); id != home {
		t.Fatalf("dh moved a title: %s then %s", home, id)
	}
	r := Request{Title: "film", Bitrate: 5e6}
	if _, err := s.Place(&r, t0); !errors.Is(err, ErrNoCapacity) {
		t.Fatalf("dh with its node full: %v, want ErrNoCapacity (no fallback)", err)
	}
	s.MarkDead(home)
	if id, _ := place(t, s, "film", "x", 5e6); id == "" || id == home {
		t.Fatalf("after %s died the table must be rebuilt over live nodes: %q", home, id)
	}
}

func TestSHStablePerSubscriberWithFallback(t *testing.T) {
	s := sched(t, "sh", nil, 10e6, 10e6, 10e6)
	home, _ := place(t, s, "t1", "alice", 5e6)
	if id, _ := place(t, s, "t2", "alice", 5e6); id != home {
		t.Fatalf("sh moved a subscriber: %s then %s", home, id)
	}
	if id, _ := place(t, s, "t3", "alice", 5e6); id == home || id == "" {
		t.Fatalf("sh fallback when the node is full: %q", id)
	}
}

func TestMHStableAndMinimalDisruption(t *testing.T) {
	const n = 10
	bps := make([]int64, n)
	for i := range bps {
		bps[i] = 100e9
	}
	s := sched(t, "mh", nil, bps...)
	before := map[string]string{}
	for i := 0; i < 2000; i++ {
		c := fmt.Sprint("sub", i)
		id, res := place(t, s, "t", c, 1e6)
		before[c] = id
		s.Release(res)
	}
	s.MarkDead("c")
	moved := 0
	for c, was := range before {
		id, res := place(t, s, "t", c, 1e6)
		s.Release(res)
		if id == "c" {
			t.Fatal("dead node chosen")
		}
		if was != "c" && id != was {
			moved++
		}
	}
	if moved > 2000/10 {
		t.Fatalf("%d of the keys not on the dead node moved; Maglev should move few", moved)
	}
}

func TestTwosRepeatsForASeedAndBalances(t *testing.T) {
	a := seq(t, sched(t, "twos", nil, 1e9, 1e9, 1e9, 1e9), 50, each, 1e6)
	b := seq(t, sched(t, "twos", nil, 1e9, 1e9, 1e9, 1e9), 50, each, 1e6)
	if a != b {
		t.Fatal("same seed, different choices")
	}
	for _, id := range "abcd" {
		if c := strings.Count(a, string(id)); c < 8 || c > 17 {
			t.Fatalf("twos spread %s: %c has %d of 50", a, id, c)
		}
	}
}

func TestLARDMovesFromHighToLow(t *testing.T) {
	s := sched(t, "lard", nil, 100e6, 100e6)
	home, _ := place(t, s, "film", "x", 10e6)
	for i := 0; i < 7; i++ {
		if id, _ := place(t, s, "film", "x", 10e6); id != home {
			t.Fatalf("lard left the title's node at %d%%", (i+1)*10)
		}
	}
	// home is at 80%: not above T_high (85%).
	if id, _ := place(t, s, "film", "x", 10e6); id != home {
		t.Fatal("moved below T_high")
	}
	// home at 90% > T_high, other node idle < T_low: move.
	if id, _ := place(t, s, "film", "x", 5e6); id == home {
		t.Fatal("lard did not move the title off an overloaded node")
	}
}

func TestLARDRServerSet(t *testing.T) {
	s := sched(t, "lard/r", nil, 100e6, 100e6)
	for i := 0; i < 10; i++ {
		place(t, s, "film", "x", 10e6) // the 10th finds the first node at 90% > T_high
	}
	set := s.Policy().(*LARDR).table["film"]
	if len(set.nodes) != 2 {
		t.Fatalf("set %v: want a replica once the first node passed T_high", set.nodes)
	}
	// The least utilized member takes the next session.
	id, _ := place(t, s, "film", "x", 1e6)
	if n := s.Node(id); n.ReservedBps > 20e6 {
		t.Fatalf("went to the busy member %s", id)
	}
}

func TestCHBLBoundsEveryNode(t *testing.T) {
	s := sched(t, "chbl", nil, 100e6, 100e6, 100e6, 100e6)
	for i := 0; i < 30; i++ {
		if id, _ := place(t, s, "film", "x", 10e6); id == "" {
			t.Fatalf("request %d refused", i)
		}
		var total int64
		for _, n := range s.Nodes {
			total += n.ReservedBps
		}
		for _, n := range s.Nodes {
			// ceil(c * mean) sessions of 10 Mbit/s per node.
			bound := int64(ceilDiv(125*total, 100*4*10e6)) * 10e6
			if n.ReservedBps > bound+10e6 {
				t.Fatalf("node %s holds %d bit/s, bound %d (total %d)", n.ID, n.ReservedBps, bound, total)
			}
		}
	}
	// One title, spread only because of the bound: the first node on its
	// ring point got the most.
	var most int64
	for _, n := range s.Nodes {
		most = max(most, n.ReservedBps)
	}
	if most < 80e6 {
		t.Fatalf("chbl did not keep the title on its node up to the bound (max %d)", most)
	}
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// chbl's ring holds a node's points by its own weighted capacity (4 per
// 100 Mbit/s, at most 4,000): a 100 Gbit/s node at the highest weight had
// 2.6 million points, 1.7 s to build on the request path. And a node out
// of service stays on the ring, passed over: a node that drains (or dies,
// or flaps) moves only its own titles. (Points relative to the largest
// node moved 39% of the others' titles when it drained.)
func TestCHBLRingStable(t *testing.T) {
	s := sched(t, "chbl", nil, 10e9, 1e9, 1e9, 2e9, 10e6)
	if err := s.SetWeight("a", MaxWeight); err != nil {
		t.Fatal(err)
	}
	home := func() map[string]int {
		out := map[string]int{}
		for i := range 2000 {
			r := Request{Title: fmt.Sprint("t", i), Bitrate: 1e6}
			out[r.Title] = s.Policy().Pick(s, &r)
		}
		return out
	}
	before := home()
	p := s.Policy().(*BoundedLoadHashing)
	points := map[int32]int{}
	for _, pt := range p.ring {
		points[pt.node]++
	}
	if want := map[int32]int{0: chblMaxPoints, 1: 40, 2: 40, 3: 80, 4: 1}; !maps.Equal(points, want) {
		t.Fatalf("points %v, want %v", points, want)
	}
	if err := s.SetDraining("a", true); err != nil {
		t.Fatal(err)
	}
	after := home()
	moved := 0
	for title, i := range before {
		switch {
		case i < 0 || after[title] < 0:
			t.Fatalf("%s: no node (%d, then %d)", title, i, after[title])
		case i == 0 && after[title] == 0:
			t.Fatalf("%s still on the drained node", title)
		case i != 0 && after[title] != i:
			moved++
		}
	}
	if moved > 0 {
		t.Fatalf("draining the largest node moved %d titles among the others", moved)
	}
}

func TestLallReplicatesOnlyWhenHolderIsMuchBusier(t *testing.T) {
	// Two 1 Gbit/s nodes, A = 30, FillRefBps 4 Mbit/s: a new fill is
	// charged 30*4e6/1e9 = 0.12 on top of the session's own b/E.
	s := sched(t, "lall", nil, 1e9, 1e9)
	s.SetReplica("a", "film", false, 1)
	// 10 Mbit/s sessions (b/E = 0.01): the holder takes the next one
	// while its cost k*0.01 + 0.01 is at most b's 0.01 + 0.12, k <= 12.
	for i := 0; i < 13; i++ {
		if id, _ := place(t, s, "film", "x", 10e6); id != "a" {
			t.Fatalf("session %d went to %s: holder a at %d bit/s", i, id, s.Node("a").ReservedBps)
		}
	}
	id, res := place(t, s, "film", "x", 10e6)
	if id != "b" || !res.Fill {
		t.Fatalf("14th session: %s fill=%v, want a new replica on b", id, res.Fill)
	}
	if s.Node("b").FillSessions != 1 || s.Node("b").FillBps != 10e6 || s.Filling() != 1 {
		t.Fatalf("b: Nd=%d fill bit/s=%d, filling %d", s.Node("b").FillSessions, s.Node("b").FillBps, s.Filling())
	}
	// A viewer of the title now shares b's fill rather than a third copy.
	if id2, res2 := place(t, s, "film", "x", 10e6); id2 != "b" || res2.Fill {
		t.Fatalf("shared fill: %s fill=%v", id2, res2.Fill)
	}
	// The fill completes: its sessions become local (Nd = 0).
	s.SetReplica("b", "film", false, 1)
	if n := s.Node("b"); n.FillSessions != 0 || n.FillBps != 0 || n.Sessions != 2 || s.Filling() != 0 {
		t.Fatalf("after the fill: %+v, filling %d", n, s.Filling())
	}
}

// The fill charge does not depend on the title's bitrate: a 16 Mbit/s
// title replicates at the same load difference as a 4 Mbit/s one (the
// session's own b/E aside), and the fill node is the least loaded one,
// not the one with the most egress.
func TestLallFillChargeIsFixed(t *testing.T) {
	s := sched(t, "lall", nil, 2e9, 1e9, 3e9) // mean E 2 Gbit/s: charge 30*4e6/2e9 = 0.06
	if got := s.fillCharge(); got < 0.0599 || got > 0.0601 {
		t.Fatalf("fill charge %v, want 0.06", got)
	}
	s.Reserve("a", "bg", 0.1e9)  // 5%
	s.Reserve("c", "bg", 0.15e9) // 5%
	// A fill costs its session's b/E and the charge on every node: b,
	// idle, is cheapest (0.016 against a's 0.058 and c's 0.0553), though
	// a charge divided by each node's egress would prefer c.
	r := Request{Title: "uhd", Bitrate: 16e6}
	if res, err := s.Place(&r, t0); err != nil || res.NodeID != "b" || !res.Fill {
		t.Fatalf("fill of a title nobody holds: %+v %v, want b", res, err)
	}
	// a holds "uhd2": at 5% (0.058) it keeps it against a fill on b
	// (0.016 + 0.016 + 0.06 = 0.092).
	s.SetReplica("a", "uhd2", false, 1)
	if id, _ := place(t, s, "uhd2", "x", 16e6); id != "a" {
		t.Fatalf("holder at 5%% vs fill on b at 1.6%%: went to %s", id)
	}
	s.Reserve("a", "bg", 0.1e9) // a at 10.8%: 0.108 + 0.008 > 0.092
	if id, res := place(t, s, "uhd2", "x", 16e6); id != "b" || !res.Fill {
		t.Fatalf("holder at 10.8%%: went to %s fill=%v, want a replica on b", id, res.Fill)
	}
}

// A holder above the overload threshold is passed over while another
// holder can take the session; when none can, it competes with the fill
// by the formula (its overload penalty included).
func TestLallOverloadedHolders(t *testing.T) {
	s := sched(t, "lall", nil, 1e9, 1e9, 1e9) // charge 30*4e6/1e9 = 0.12
	s.SetReplica("a", "film", false, 1)
	s.SetReplica("c", "film", false, 1)
	// a measures 95% (overloaded) with nothing reserved: by the formula
	// it is the cheapest holder (0 + 1/0.8*0.15 + 0.004 = 0.19), but c,
	// below the threshold, takes the session (0.85 + 0.0625 + 0.004);
	// b, as busy as c, would cost that plus the fill charge.
	s.Heartbeat("a", Report{EgressBps: 950e6}, t0)
	s.Reserve("b", "bg", 850e6)
	s.Reserve("c", "bg", 850e6)
	if id, _ := place(t, s, "film", "x", 4e6); id != "c" {
		t.Fatalf("went to %s, want the holder c below its threshold", id)
	}
	s = sched(t, "lall", nil, 1e9, 1e9, 1e9)
	s.SetReplica("a", "film", false, 1)
	s.Reserve("a", "bg", 950e6) // cost 0.95 + 1/0.8*0.15 + 0.004 = 1.1415
	s.Reserve("b", "bg", 900e6) // fill cost 0.9 + 0.125 + 0.004 + 0.12 = 1.149
	s.Reserve("c", "bg", 900e6)
	if id, res := place(t, s, "film", "x", 4e6); id != "a" || res.Fill {
		t.Fatalf("every node hot: went to %s fill=%v, want the overloaded holder a", id, res.Fill)
	}
	s.Release(Reservation{Node: 1, Title: "bg", Bitrate: 54e6}) // b at 0.846: 0.846 + 0.0575 + 0.004 + 0.12 < 1.1455
	if id, res := place(t, s, "film", "x", 4e6); id != "b" || !res.Fill {
		t.Fatalf("a fill on b is cheaper: went to %s fill=%v", id, res.Fill)
	}
	if an := s.Anomalies(); an.UnbalancedReleases != 0 {
		t.Fatalf("anomalies %+v", an)
	}
}

// With the origin's channels all busy, a holder with headroom takes the
// session however loaded, rather than a fill that would wait.
func TestLallHoldsBackFillsWhenTheOriginIsSaturated(t *testing.T) {
	for _, channels := range []int{0, 1} {
		s := sched(t, "lall", func(c *Config) { c.OriginChannels = channels }, 1e9, 1e9, 1e9)
		s.SetReplica("a", "film", false, 1)
		s.Reserve("a", "bg", 500e6)
		s.SetReplica("c", "other", true, 1) // one fill in progress
		id, res := place(t, s, "film", "x", 4e6)
		switch {
		case channels == 0 && (id != "b" || !res.Fill):
			t.Fatalf("origin not counted: went to %s fill=%v, want a fill on b", id, res.Fill)
		case channels == 1 && (id != "a" || res.Fill):
			t.Fatalf("origin saturated: went to %s fill=%v, want the holder a", id, res.Fill)
		}
	}
}

func TestDiskRoomIsAdmission(t *testing.T) {
	for _, p := range Policies() {
		s := sched(t, p, nil, 1e9, 1e9)
		s.Nodes[0].Capacity.DiskBytes = 10e9
		s.Nodes[1].Capacity.DiskBytes = 10e9
		// b's disk is full of a title in use.
		s.SetReplica("b", "big", false, 9e9)
		r := Request{Title: "big", Bitrate: 1e6, Bytes: 9e9}
		if _, err := s.Reserve("b", "big", 1e6); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			r = Request{Title: fmt.Sprint("new", i), Client: fmt.Sprint("c", i), Bitrate: 1e6, Bytes: 2e9}
			res, err := s.Place(&r, t0)
			if p == "dh" && err != nil {
				continue // dh refuses rather than fall back
			}
			if err != nil || res.NodeID != "a" {
				t.Fatalf("%s: a new 2 GB title went to %q (%v); b has 1 GB not in use", p, res.NodeID, err)
			}
			s.Release(res)
			s.DropReplica("a", r.Title)
		}
	}
}
