package lsm

import (
	"errors"
	"fmt"
	"testing"
)

// Every policy places a request that requires a feature (an RTSPS viewer)
// only on nodes that offer it, even when another node holds the title or
// is idle; with no such node in service it is refused. Other requests go
// anywhere.
func TestEveryPolicyKeepsToRequiredFeatures(t *testing.T) {
	for _, p := range Policies() {
		cfg := DefaultConfig()
		cfg.Policy = p
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []NodeSpec{
			{ID: "plain", Capacity: Capacity{EgressBps: 100e6}},
			{ID: "tls", Capacity: Capacity{EgressBps: 100e6}, Features: FeatureRTSPS},
		} {
			if _, err := s.AddNode(n, t0); err != nil {
				t.Fatal(err)
			}
		}
		s.SetReplica("plain", "film", false, 1) // only the plain node holds it
		for i := range 6 {
			r := Request{Title: "film", Client: fmt.Sprint("c", i), Bitrate: 4e6, Requires: FeatureRTSPS}
			if res, err := s.Place(&r, t0); err != nil || res.NodeID != "tls" {
				t.Errorf("%s: RTSPS viewer %d: %+v %v, want the node with RTSPS", p, i, res, err)
				break
			}
		}
		if err := s.SetDraining("tls", true); err != nil {
			t.Fatal(err)
		}
		r := Request{Title: "film", Client: "late", Bitrate: 4e6, Requires: FeatureRTSPS}
		if _, err := s.Place(&r, t0); !errors.Is(err, ErrNoCapacity) {
			t.Errorf("%s: RTSPS viewer with no RTSPS node in service: %v, want ErrNoCapacity", p, err)
		}
		r = Request{Title: "film", Client: "plain", Bitrate: 4e6}
		if res, err := s.Place(&r, t0); err != nil || res.NodeID != "plain" {
			t.Errorf("%s: a plain viewer: %+v %v", p, res, err)
		}
	}
}
