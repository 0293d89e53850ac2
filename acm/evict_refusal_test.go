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
