package lsm

import (
	"testing"
	"time"
)

// lblc forgets a title->node entry unused for LBLCExpiration: the title
// then goes to wlc's choice, even though its old node could take it.
func TestLBLCEntryExpires(t *testing.T) {
	s := sched(t, "lblc", func(c *Config) { c.LBLCExpiration = time.Hour }, 100e6, 100e6)
	home, _ := place(t, s, "film", "x", 1e6)
	other := "a"
	if home == "a" {
		other = "b"
	}
	// home now has more sessions than other: wlc would pick other, but
	// the entry holds.
	s.Reserve(home, "bg", 10e6)
	s.Reserve(home, "bg", 10e6)
	at := func(d time.Duration) string {
		r := Request{Title: "film", Bitrate: 1e6}
		res, err := s.Place(&r, t0.Add(d))
		if err != nil {
			t.Fatal(err)
		}
		return res.NodeID
	}
	if id := at(59 * time.Minute); id != home {
		t.Fatalf("entry used within its life: went to %s, want %s", id, home)
	}
	// Used at 59 min: alive until 1 h 59 min.
	if id := at(time.Hour + 58*time.Minute); id != home {
		t.Fatalf("entry refreshed by its use: went to %s, want %s", id, home)
	}
	if id := at(4 * time.Hour); id != other {
		t.Fatalf("expired entry: went to %s, want wlc's choice %s", id, other)
	}
	if e := s.Policy().(*LBLC).table["film"]; s.Nodes[e.node].ID != other {
		t.Fatalf("table not updated: %v", e)
	}
}

// lard/r drops the most utilized member of a title's server set once the
// set has not changed for LBLCRShrink (Pai et al.'s K), keeping the one
// that takes the session.
func TestLARDRShrinksItsSet(t *testing.T) {
	s := sched(t, "lard/r", func(c *Config) { c.LBLCRShrink = time.Minute }, 100e6, 100e6, 100e6)
	p := s.Policy().(*LARDR)
	for i := 0; i < 10; i++ {
		place(t, s, "film", "x", 10e6) // the 10th finds the first node at 90% > T_high, others idle
	}
	set := p.table["film"]
	if len(set.nodes) != 2 {
		t.Fatalf("set %v, want two members", set.nodes)
	}
	busy := set.nodes[0] // the first member, 90%
	r := Request{Title: "film", Bitrate: 1e6}
	// Within K the set stays as it is.
	if _, err := s.Place(&r, t0.Add(30*time.Second)); err != nil || len(set.nodes) != 2 {
		t.Fatalf("set %v before K (%v)", set.nodes, err)
	}
	res, err := s.Place(&r, t0.Add(2*time.Minute))
	if err != nil || len(set.nodes) != 1 || set.nodes[0] == busy || res.Node == int(busy) {
		t.Fatalf("after K: set %v, placed on %d (%v); the busy member %d should be gone", set.nodes, res.Node, err, busy)
	}
	// A set of one member is never emptied.
	if _, err := s.Place(&r, t0.Add(time.Hour)); err != nil || len(set.nodes) != 1 {
		t.Fatalf("set %v after another K", set.nodes)
	}
}

// mh: when the subscriber's node cannot take the session, the probes of
// the kernel's mh-fallback are tried in order: the node of table[mix(h+1)],
// then table[mix(h+2)], ...
func TestMHFallbackProbesInOrder(t *testing.T) {
	s := sched(t, "mh", nil, 10e6, 10e6, 10e6, 10e6)
	p := s.Policy().(*MaglevHashing)
	home, _ := place(t, s, "t", "alice", 1e6)
	r := Request{Title: "t", Client: "alice", Bitrate: 1e6}
	h := r.ClientHash()
	m := uint64(len(p.table))
	if got := s.Nodes[p.table[h%m]].ID; got != home {
		t.Fatalf("alice's slot is %s, placed on %s", got, home)
	}
	s.Reserve(home, "bg", 9e6) // home full
	var want string
	for k := uint64(1); ; k++ {
		if id := s.Nodes[p.table[mix64(h+k)%m]].ID; id != home {
			want = id
			break
		}
	}
	if id, _ := place(t, s, "t", "alice", 1e6); id != want {
		t.Fatalf("fallback went to %s, want the first probe off %s: %s", id, home, want)
	}
	// Every node full but one: the probes or the final scan find it.
	free := "a"
	for _, id := range []string{"a", "b", "c", "d"} {
		if id != home && id != want {
			free = id
		}
	}
	for _, n := range s.Nodes {
		if n.ID != free {
			s.Reserve(n.ID, "bg", n.HeadroomBps())
		}
	}
	if id, _ := place(t, s, "t", "alice", 1e6); id != free {
		t.Fatalf("the one node with headroom %s: got %q", free, id)
	}
	if id, _ := place(t, s, "t", "alice", 10e6); id != "" {
		t.Fatalf("no node can take 10 Mbit/s: got %q", id)
	}
}

// twos, hand-checked on the seed-1 stream: splitmix64 draws give u1..u6 =
// 0.5666, 0.7458, 0.9710, 0.4444, 0.4443, 0.7629. Nodes a 1, b 2, c 1
// Gbit/s have weights 10, 20, 10 (total 40: a [0,10), b [10,30),
// c [30,40)). Pick 1: 22.7 and 29.8 are both b. Pick 2: 38.8 is c, 17.8
// is b; c has 0 sessions per weight, b 1/20: c. Pick 3: 17.8 is b (1/20),
// 30.5 is c (1/10): b.
func TestTwosHandChecked(t *testing.T) {
	s := sched(t, "twos", nil, 1e9, 2e9, 1e9)
	if got := seq(t, s, 3, each, 1e6); got != "bcb" {
		t.Fatalf("twos = %s, want bcb", got)
	}
}
