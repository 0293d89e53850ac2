package lsm

import (
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
}
