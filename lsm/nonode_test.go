package lsm

import (
	"errors"
	"testing"
	"time"
)

// AnyNodeReporting is false only without a node alive or dead within the
// grace, whatever the nodes offer or the operator set; RefuseAll empties
// the queue with the error given.
func TestAnyNodeReportingAndRefuseAll(t *testing.T) {
	grace := t0.Add(-30 * time.Second)
	if s := newTestScheduler(t, "lall"); s.AnyNodeReporting(grace) {
		t.Fatal("no node registered, yet one reporting")
	}
	s := newTestScheduler(t, "lall", 10e6)
	s.SetDraining("a", true)
	s.SetWeight("a", 0)
	if !s.AnyNodeReporting(grace) {
		t.Fatal("a alive, drained and at weight 0: not reporting")
	}
	s.SetDraining("a", false)
	s.SetWeight("a", 100)
	s.SetUnreachable("a")
	if !s.AnyNodeReporting(grace) {
		t.Fatal("a unreachable: not reporting")
	}
	s.MarkDead("a")
	if !s.AnyNodeReporting(grace) {
		t.Fatal("a dead within the grace: not reporting")
	}
	if s.AnyNodeReporting(t0.Add(time.Second)) {
		t.Fatal("a dead beyond the grace: still reporting")
	}
	var tks []*Ticket
	for range 3 {
		tk, err := s.Admit(Request{Title: "film", Bitrate: 10e6}, t0.Add(time.Minute), t0)
		if err != nil || tk.Done {
			t.Fatalf("a dead: %+v %v", tk, err)
		}
		tks = append(tks, tk)
	}
	gone := errors.New("no node")
	done := s.RefuseAll(gone)
	if len(done) != 3 || s.Queued() != 0 {
		t.Fatalf("refused %d, %d still queued", len(done), s.Queued())
	}
	for i, tk := range tks {
		if done[i] != tk || !tk.Done || tk.Err != gone {
			t.Fatalf("ticket %d: %+v", i, tk)
		}
	}
}
