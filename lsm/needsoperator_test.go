package lsm

import (
	"fmt"
	"testing"
	"time"
)

// NeedsOperator holds only when every node that could take the request
// and may come back by itself is drained or at weight 0.
func TestNeedsOperator(t *testing.T) {
	s := newTestScheduler(t, "lall", 10e6, 10e6)
	r := Request{Title: "film", Bitrate: 10e6}
	grace := t0.Add(-30 * time.Second)
	if s.NeedsOperator(&r, grace) {
		t.Fatal("nodes in service")
	}
	if _, err := s.Place(&r, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Place(&Request{Title: "film", Bitrate: 10e6}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Place(&r, t0); err != ErrNoCapacity || s.NeedsOperator(&r, grace) {
		t.Fatalf("both full (%v): capacity frees by itself, yet NeedsOperator", err)
	}
	s.SetDraining("a", true)
	s.SetWeight("b", 0)
	if !s.NeedsOperator(&r, grace) {
		t.Fatal("a drained, b at weight 0: not held by the operator")
	}
	// A node that offers nothing r requires does not count either way.
	if s.NeedsOperator(&Request{Title: "film", Bitrate: 1, Requires: FeatureRTSPS}, grace) {
		t.Fatal("no node offers RTSPS: none to take into account, yet NeedsOperator")
	}
	// b unreachable, back at weight 100: its heartbeats may resume.
	s.SetWeight("b", 100)
	s.SetUnreachable("b")
	if s.NeedsOperator(&r, grace) {
		t.Fatal("b unreachable: it may come back by itself")
	}
	// b dead within the grace, then beyond it.
	s.MarkDead("b")
	if s.NeedsOperator(&r, grace) {
		t.Fatal("b dead within the grace")
	}
	if !s.NeedsOperator(&r, t0.Add(time.Second)) {
		t.Fatal("b dead beyond the grace, a drained: not held by the operator")
	}
	// Kept to a site with no node: nothing to take into account.
	site := Request{Title: "film", Bitrate: 1, Site: "east", SiteOnly: true}
	if s.NeedsOperator(&site, grace) {
		t.Fatal("no node of the site: NeedsOperator")
	}
	// A waiting ticket is refused once the operator drains the last node.
	s.SetDraining("a", false)
	tk, err := s.Admit(Request{Title: "film", Bitrate: 10e6}, t0.Add(time.Minute), t0)
	if err != nil || tk.Done {
		t.Fatalf("a full: %+v %v", tk, err)
	}
	if got := s.RefuseNeedingOperator(grace, ErrDeadline); len(got) != 0 || s.Queued() != 1 {
		t.Fatalf("a full, not drained: refused %d", len(got))
	}
	s.SetDraining("a", true)
	if got := s.RefuseNeedingOperator(grace, ErrDeadline); len(got) != 0 {
		t.Fatal("a drained, b dead within the grace: refused")
	}
	if got := s.RefuseNeedingOperator(t0.Add(time.Second), ErrDeadline); len(got) != 1 || got[0] != tk || tk.Err != ErrDeadline || s.Queued() != 0 {
		t.Fatalf("a drained, b dead beyond the grace: refused %d, queued %d, err %v", len(got), s.Queued(), tk.Err)
	}
	// Each waiting request is judged by its own features: with a drained,
	// one needing RTSPS (no node offers it: none to take into account)
	// waits on while the plain ones queued around it are refused.
	s.SetDraining("a", false)
	var plain []*Ticket
	var rtsps *Ticket
	for i, req := range []Request{{Title: "film", Bitrate: 10e6}, {Title: "film", Bitrate: 10e6, Requires: FeatureRTSPS}, {Title: "film", Bitrate: 10e6}} {
		tk, err := s.Admit(req, t0.Add(time.Minute), t0)
		if err != nil || tk.Done {
			t.Fatalf("request %d not queued: %+v %v", i, tk, err)
		}
		if req.Requires != 0 {
			rtsps = tk
		} else {
			plain = append(plain, tk)
		}
	}
	s.SetDraining("a", true)
	got := s.RefuseNeedingOperator(t0.Add(time.Second), ErrDeadline)
	if len(got) != 2 || got[0] != plain[0] || got[1] != plain[1] || rtsps.Done || s.Queued() != 1 {
		t.Fatalf("mixed queue: refused %d (want the 2 plain), RTSPS done %v, queued %d", len(got), rtsps.Done, s.Queued())
	}
}

// BenchmarkRefuseNeedingOperator times the check the manager runs at each
// pump of a non-empty queue (every admission, session end and queue
// deadline) in an overload at its worst: 5,000 requests waiting on 300
// full nodes, all drained but the last, so none is refused and every
// node is looked at.
func BenchmarkRefuseNeedingOperator(b *testing.B) {
	cfg := DefaultConfig()
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 300 {
		if _, err := s.AddNode(NodeSpec{ID: fmt.Sprintf("n%03d", i), Capacity: Capacity{EgressBps: 4e6}}, t0); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 300 {
		if _, err := s.Place(&Request{Title: fmt.Sprintf("t%d", i), Bitrate: 4e6}, t0); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 5000 {
		tk, err := s.Admit(Request{Title: fmt.Sprintf("w%d", i), Bitrate: 4e6}, t0.Add(time.Hour), t0)
		if err != nil || tk.Done {
			b.Fatalf("request %d not queued: %+v %v", i, tk, err)
		}
	}
	for i := range 299 {
		s.SetDraining(fmt.Sprintf("n%03d", i), true)
	}
	grace := t0.Add(-30 * time.Second)
	b.ReportAllocs()
	for b.Loop() {
		if got := s.RefuseNeedingOperator(grace, ErrDeadline); len(got) != 0 {
			b.Fatalf("%d refused", len(got))
		}
	}
}
