package acm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// rawState is the state key name as st holds it ("" when it has none).
func rawState(t *testing.T, st store.Store, name string) string {
	t.Helper()
	b, err := st.State(context.Background(), name)
	if errors.Is(err, store.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A prefetch or an eviction asked of the standby is refused, naming the
// active manager, as a pin change is: a standby never plans, so a
// prefetch it queued was answered "ordered by the first plan" and never
// ordered, and its writes of the stored prefetch orders and eviction
// holds (each one list) raced the active manager's. The stored lists are
// left as the active manager wrote them; the active manager's prefetch
// and eviction still work.
func TestStandbyRefusesPrefetchAndEvict(t *testing.T) {
	ctx := context.Background()
	open, _ := sharedRedis(t)
	st := open()
	a, b := activeAndStandby(t, open, unhinted(), quietStorage) // one fill per node, no plan during the test
	// The active manager's order queued on its node n1 (filling p: at its
	// fill limit) is stored.
	a.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000, held: []*pb.StoredTitle{filling("p"), stored("t2")}})
	a.queueOn("n1", "t1")
	// n2 is registered with the standby, at its fill limit too, holding t2.
	b.startSimNode("n2", storageTitles, simOpts{disk: 5_000_000, held: []*pb.StoredTitle{filling("q"), stored("t2")}})
	orders, holds := rawState(t, st, statePrefetches), rawState(t, st, stateEvictHolds)
	if !strings.Contains(orders, `"node":"n1","title":"t1"`) {
		t.Fatalf("stored orders %s: want the active manager's t1 on n1", orders)
	}

	_, prefetchErr := b.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t3", NodeId: "n2"})
	_, anywhereErr := b.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t3"})
	_, evictErr := b.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n2"})
	for what, err := range map[string]error{"prefetch": prefetchErr, "prefetch naming no node": anywhereErr, "evict": evictErr} {
		verb, _, _ := strings.Cut(what, " ")
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), "standby") ||
			!strings.Contains(status.Convert(err).Message(), verb+" the title on the active manager") {
			t.Errorf("the standby's %s: %v; want FAILED_PRECONDITION saying to %s on the active manager", what, err, verb)
		}
	}
	if got := rawState(t, st, statePrefetches); got != orders {
		t.Errorf("stored orders after the standby's prefetch and evict: %s, want the active manager's %s", got, orders)
	}
	if got := rawState(t, st, stateEvictHolds); got != holds {
		t.Errorf("stored eviction holds after the standby's evict: %q, want %q", got, holds)
	}
	if f := b.fill("n2", "t3"); f != nil {
		t.Errorf("the standby lists a fill of t3 on n2: %+v", f)
	}

	// The active manager's still work: its eviction of t2 from n1 is
	// held in the store, its eviction of the queued t1 cancels the order.
	ack, err := a.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"})
	if err != nil || !strings.HasPrefix(ack.GetMessage(), "eviction ordered") {
		t.Fatalf("the active manager's evict of t2 on n1: %v %v", ack, err)
	}
	if got := rawState(t, st, stateEvictHolds); !strings.Contains(got, `"node":"n1","title":"t2"`) {
		t.Errorf("stored holds after the active manager's evict: %s, want t2 on n1", got)
	}
	ack, err = a.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	if err != nil || !strings.Contains(ack.GetMessage(), "is cancelled") {
		t.Fatalf("the active manager's evict of the queued t1 on n1: %v %v", ack, err)
	}
	if got := rawState(t, st, statePrefetches); strings.Contains(got, `"title":"t1"`) {
		t.Errorf("stored orders after the active manager cancelled t1: %s", got)
	}
}
