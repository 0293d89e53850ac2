package lsm

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// A request whose bitrate is near MaxInt64 (a catalog's nonsense) is
// refused by every policy: the headroom test summed the node's reserved
// bit/s and the bitrate, which wrapped negative and fitted, and the
// node's reserved bit/s went negative (it then looked empty to every
// policy).
func TestHugeBitrateRefusedByEveryPolicy(t *testing.T) {
	for _, p := range Policies() {
		s := sched(t, p, nil, 1e9)
		if id, _ := place(t, s, "a", "x", 1); id == "" {
			t.Fatalf("%s: a 1 bit/s session refused", p)
		}
		r := Request{Title: "a", Client: "y", Bitrate: math.MaxInt64}
		if res, err := s.Place(&r, t0); err == nil {
			t.Errorf("%s: placed %d bit/s on a 1 Gbit/s node: reserved now %d", p, r.Bitrate, s.Nodes[res.Node].ReservedBps)
		}
		if got := s.Nodes[0].ReservedBps; got != 1 {
			t.Errorf("%s: reserved %d bit/s after the refusal, want 1", p, got)
		}
	}
}

// NaN and the infinities are refused in every parameter of Config: they
// passed where the tests were written so that NaN compares false (A=+Inf
// made every load NaN, a NaN slow-start floor kept a ramping node from
// taking anything, a NaN chbl factor refused every request).
func TestConfigRefusesNaNAndInf(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for name, mut := range map[string]func(*Config){
		"normal NaN":           func(c *Config) { c.Normal = nan },
		"slow start floor NaN": func(c *Config) { c.SlowStartFloor = nan },
		"chbl factor NaN":      func(c *Config) { c.CHBLFactor = nan },
		"chbl factor +Inf":     func(c *Config) { c.CHBLFactor = inf },
		"lard low NaN":         func(c *Config) { c.LARDLow = nan },
		"lard high NaN":        func(c *Config) { c.LARDHigh = nan },
		"lard high 2":          func(c *Config) { c.LARDHigh = 2 },
		"a +Inf":               func(c *Config) { c.A = inf },
		"b +Inf":               func(c *Config) { c.B = inf },
		"disk pressure +Inf":   func(c *Config) { c.DiskPressure = inf },
	} {
		cfg := DefaultConfig()
		mut(&cfg)
		if _, err := New(cfg); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

// lblc, lblcr, lard and lard/r judge a title's busy node against nodes
// that could take its viewers: an idle node without RTSPS is no reason
// to move a title its RTSPS viewers watch. It was, and the title went to
// the other busy node (a fill there), then back and forth.
func TestLocalityPoliciesIgnoreNodesThatCannotTakeTheViewer(t *testing.T) {
	for _, c := range []struct {
		policy string
		busy   [2]int64 // a's and b's reserved bit/s of 100 Mbit/s
	}{{"lblc", [2]int64{95e6, 95e6}}, {"lblcr", [2]int64{95e6, 95e6}}, {"lard", [2]int64{88e6, 87e6}}, {"lard/r", [2]int64{88e6, 87e6}}} {
		run := func(withIdle bool) string {
			cfg := DefaultConfig()
			cfg.Policy = c.policy
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			s.AddNode(NodeSpec{ID: "a", Features: FeatureRTSPS, Capacity: Capacity{EgressBps: 100e6}}, t0)
			s.AddNode(NodeSpec{ID: "b", Features: FeatureRTSPS, Capacity: Capacity{EgressBps: 100e6}}, t0)
			if withIdle {
				s.AddNode(NodeSpec{ID: "c", Capacity: Capacity{EgressBps: 100e6}}, t0) // no RTSPS
			}
			s.Reserve("a", "x", c.busy[0])
			s.Reserve("b", "y", c.busy[1])
			var out []string
			for range 4 {
				r := Request{Title: "film", Client: "v", Bitrate: 1e6, Requires: FeatureRTSPS}
				res, err := s.Place(&r, t0)
				if err != nil {
					out = append(out, "-")
					continue
				}
				out = append(out, res.NodeID)
			}
			return strings.Join(out, "")
		}
		without, with := run(false), run(true)
		if without != with || strings.Count(with, with[:1]) != 4 {
			t.Errorf("%s: film on %q without the idle node lacking RTSPS, %q with it; want one node throughout, the same", c.policy, without, with)
		}
	}
}

// dh: a node of 20 going out of service (drained, dead, or its heartbeat
// stream broken for a moment) moves only its own titles, and gets them
// back when it returns. The table was rebuilt over the nodes in service,
// which moved ~96% of the others' titles (each a new fill), and back.
// sh likewise for subscribers.
func TestHashTablesMoveOnlyTheTitlesOfANodeOutOfService(t *testing.T) {
	bps := make([]int64, 20)
	for i := range bps {
		bps[i] = 100e9
	}
	for _, p := range []string{"dh", "sh"} {
		s := sched(t, p, nil, bps...)
		where := func() map[string]string {
			m := map[string]string{}
			for k := range 3000 {
				key := fmt.Sprint("k", k)
				r := Request{Title: key, Client: key, Bitrate: 1}
				res, err := s.Place(&r, t0)
				if err != nil {
					t.Fatal(err)
				}
				s.Release(res)
				m[key] = res.NodeID
			}
			return m
		}
		before := where()
		s.SetUnreachable("a")
		during := where()
		moved, others, spread := 0, 0, map[string]bool{}
		for k, id := range before {
			switch {
			case id == "a":
				spread[during[k]] = true
			case during[k] != id:
				moved++
				others++
			default:
				others++
			}
		}
		if moved != 0 {
			t.Errorf("%s: node a out of service moved %d of the %d keys of the other nodes", p, moved, others)
		}
		if len(spread) < 5 || spread["a"] {
			t.Errorf("%s: a's keys went to %d nodes (%v), want spread over the others", p, len(spread), spread)
		}
		s.Heartbeat("a", Report{}, t0) // reports again
		after := where()
		back := 0
		for k, id := range before {
			if after[k] == id {
				back++
			}
		}
		if back != len(before) {
			t.Errorf("%s: %d of %d keys on their node after a returned, want all", p, back, len(before))
		}
	}
}

// mh gives every node in service at least one slot of its table (as the
// kernel's ip_vs_mh gives each destination of positive weight a turn):
// one node of weight 65535 among others of weight 1 took every slot.
func TestMaglevSlotForEveryNode(t *testing.T) {
	s := sched(t, "mh", nil)
	for i := range 50 {
		w := 1
		if i == 0 {
			w = MaxWeight
		}
		s.AddNode(NodeSpec{ID: fmt.Sprint("n", i), Weight: w, Capacity: Capacity{EgressBps: 10e9}}, t0)
	}
	have := map[int32]bool{}
	for _, v := range buildMaglev(s) {
		have[v] = true
	}
	if len(have) != 50 {
		t.Errorf("%d of 50 nodes have a slot of the Maglev table, want all", len(have))
	}
}

// lblc, lblcr, lard and lard/r delete the entries of titles unused for
// LBLCExpiration (24 h), as the kernel's tables do: every title ever asked
// for stayed (lard and lard/r kept theirs for the manager's life).
func TestLocalityTablesForgetUnusedTitles(t *testing.T) {
	for _, p := range []string{"lblc", "lblcr", "lard", "lard/r"} {
		s := sched(t, p, nil, 1e9, 1e9)
		size := func() int {
			switch pol := s.Policy().(type) {
			case *LBLC:
				return len(pol.table)
			case *LBLCR:
				return len(pol.table)
			case *LARD:
				return len(pol.table)
			case *LARDR:
				return len(pol.table)
			}
			t.Fatalf("%s: policy %T", p, s.Policy())
			return 0
		}
		for k := range 100 {
			r := Request{Title: fmt.Sprint("old", k), Client: "c", Bitrate: 1}
			res, err := s.Place(&r, t0)
			if err != nil {
				t.Fatal(err)
			}
			s.Release(res)
		}
		later := t0.Add(25 * time.Hour)
		r := Request{Title: "new", Client: "c", Bitrate: 1}
		if _, err := s.Place(&r, later); err != nil {
			t.Fatal(err)
		}
		if got := size(); got != 1 {
			t.Errorf("%s: %d entries a day after 100 titles were last asked for and one since, want 1", p, got)
		}
	}
}

// sh with the heavy nodes out of service shares its subscribers among the
// light nodes left: a node far lighter than the others had no bucket of
// its own, and with the heavy ones dead every bucket was lent to a dead
// node, so the fallback sent every subscriber to one light node.
func TestSourceHashingLightNodesLeftShare(t *testing.T) {
	s := sched(t, "sh", nil, 100e9, 100e9, 100e6, 100e6) // a, b heavy; c, d light
	s.MarkDead("a")
	s.MarkDead("b")
	split := map[string]int{}
	for k := range 1000 {
		r := Request{Title: "t", Client: fmt.Sprint("viewer-", k), Bitrate: 1}
		res, err := s.Place(&r, t0)
		if err != nil {
			t.Fatal(err)
		}
		s.Release(res)
		split[res.NodeID]++
	}
	if split["c"] < 300 || split["d"] < 300 {
		t.Errorf("subscribers on the light nodes left: %v, want shared", split)
	}
}

// A bucket table of 1000 nodes, most out of service (a site's outage,
// its nodes registering again one by one: a rebuild at each).
func BenchmarkBucketsMostOutOfService(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Policy = "dh"
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		s.AddNode(NodeSpec{ID: fmt.Sprint("n", i), Capacity: Capacity{EgressBps: 1e9}}, t0)
		if i >= 10 {
			s.MarkDead(fmt.Sprint("n", i))
		}
	}
	var base bucketBase
	buildBuckets(s, bucketCount(len(s.Nodes)), false, "", 0, &base)
	b.ResetTimer()
	for k := range b.N {
		s.SetDraining("n0", k%2 == 0) // a state change: the base stays
		buildBuckets(s, bucketCount(len(s.Nodes)), false, "", 0, &base)
	}
}

// A request lard/r refuses (no node can take it) leaves no entry behind:
// each refused title stayed, an empty server set, until the table's sweep
// (for the manager's life before it had one).
func TestLARDRRefusalLeavesNoEntry(t *testing.T) {
	s := sched(t, "lard/r", nil, 10)
	for k := range 50 {
		r := Request{Title: fmt.Sprint("t", k), Client: "c", Bitrate: 100}
		if _, err := s.Place(&r, t0); err == nil {
			t.Fatal("a 100 bit/s session placed on a 10 bit/s node")
		}
	}
	if n := len(s.Policy().(*LARDR).table); n != 0 {
		t.Errorf("%d entries after 50 refusals, want 0", n)
	}
}
