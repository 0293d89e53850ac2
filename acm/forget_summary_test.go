package acm

import (
	"testing"

	pb "vodcluster/proto/vodcluster/v1"
)

// The line vodctl node forget prints counts in words that agree with the
// number ("1 command queued", not "1 commands queued").
func TestForgetSummaryPlurals(t *testing.T) {
	one := forgetSummary(&pb.ForgetNodeResponse{Registered: true, SessionsEnded: 1, HoldsRemoved: 1, CommandsDropped: 1, FillsDropped: 1})
	if want := "forgotten; 1 session left on it ended; 1 eviction hold removed; 1 command queued for its return dropped; 1 prefetch on it dropped"; one != want {
		t.Errorf("one of each:\n got %q\nwant %q", one, want)
	}
	two := forgetSummary(&pb.ForgetNodeResponse{Registered: true, SessionsEnded: 2, HoldsRemoved: 3, CommandsDropped: 4, FillsDropped: 5})
	if want := "forgotten; 2 sessions left on it ended; 3 eviction holds removed; 4 commands queued for its return dropped; 5 prefetches on it dropped"; two != want {
		t.Errorf("several:\n got %q\nwant %q", two, want)
	}
}
