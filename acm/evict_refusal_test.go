package acm

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// An operator's eviction refused for a title in use names what uses it:
// a viewer admitted and on its way to the node ("reserved", not
// "playing"), a session playing it, or a fill of it. It said "playing or
// filling" for each, so an operator who saw no session playing the title
// (vodctl sessions: admitted) and no fill (vodctl fills: none) was told
// of neither.
func TestEvictRefusalNamesWhatUsesTheTitle(t *testing.T) {
	e := newManager(t, "", nil)
	n := e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
		{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 40, Filling: true},
	}})
	ctx := context.Background()
	evict := func(title string) error {
		t.Helper()
		_, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: title, NodeId: "n1"})
		if status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("evict %s: %v, want FailedPrecondition", title, err)
		}
		return err
	}
	a := e.admitOne("t1")
	if err := evict("t1"); !strings.Contains(err.Error(), "admitted") || strings.Contains(err.Error(), "playing") || strings.Contains(err.Error(), "filling") {
		t.Errorf("evict of a title a viewer is admitted for: %v, want it to name the admitted viewer only", err)
	}
	if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	if err := evict("t1"); !strings.Contains(err.Error(), "1 session playing") || strings.Contains(err.Error(), "filling") {
		t.Errorf("evict of a title playing: %v, want it to name the session playing", err)
	}
	if err := evict("t2"); !strings.Contains(err.Error(), "filling") || strings.Contains(err.Error(), "playing") {
		t.Errorf("evict of a title filling: %v, want it to name the fill", err)
	}
}

// An operator's eviction refused for a title in use counts the sessions
// the node's report says play it beyond those this manager knows there
// (another manager's, in a pair sharing the nodes), and says whose they
// are: it named this manager's sessions alone ("1 session playing" on a
// node playing three).
func TestEvictRefusalCountsTheSessionsOnlyTheNodeReports(t *testing.T) {
	e := newManager(t, "", nil)
	n := e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000, Sessions: 3}, // one this manager's, once started
		{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 1_500_000, Sessions: 2},
	}})
	evict := func(title string) string {
		t.Helper()
		_, err := e.admin.Evict(context.Background(), &pb.PlacementRequest{TitleId: title, NodeId: "n1"})
		if status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("evict %s: %v, want FailedPrecondition", title, err)
		}
		return err.Error()
	}
	if msg := evict("t2"); !strings.Contains(msg, "has 2 sessions playing by the node's report (another manager's)") {
		t.Errorf("evict of a title only another manager's sessions play: %q, want them counted as another manager's", msg)
	}
	a := e.admitOne("t1")
	if msg := evict("t1"); !strings.Contains(msg, "has 2 sessions playing by the node's report (another manager's)") || !strings.Contains(msg, "1 viewer admitted") {
		t.Errorf("evict of a title another manager's sessions play, this manager's viewer on its way: %q, want both", msg)
	}
	if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	if msg := evict("t1"); !strings.Contains(msg, "has 3 sessions playing (1 this manager's: vodctl sessions; 2 more by the node's report: another manager's)") {
		t.Errorf("evict of a title this manager's session and another's play: %q, want all three counted, whose said", msg)
	}
}
