package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestAdminStorageRedisStalled: vodctl prefetch and vodctl evict on the
// active manager while its Redis does not answer (the process stopped).
// Each sent its order to the node, then made two writes of up to 10 s
// each: vodctl ended in its own DeadlineExceeded (its default --timeout
// is 10 s) while the order went ahead without the store. Each now checks
// the store within adminStoreWait (5 s) before anything changes and
// answers UNAVAILABLE saying the store did not answer within it: no
// order sent to the node, nothing in the store once Redis runs again.
func TestAdminStorageRedisStalled(t *testing.T) {
	e, open, srv := leaderOnRedis(t)
	n := e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
	}})
	if e.m.rep == nil {
		t.Fatal("no Replicator: prefetch orders and eviction holds are not stored")
	}
	srv.Pause(t)
	calls := []struct {
		name string
		req  *pb.PlacementRequest
		call func(context.Context, *pb.PlacementRequest, ...grpc.CallOption) (*pb.PlacementAck, error)
		want string
	}{
		{"prefetch", &pb.PlacementRequest{TitleId: "t3", NodeId: "n1"}, e.admin.Prefetch, "prefetch not ordered: "},
		{"evict", &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}, e.admin.Evict, "title not evicted: "},
	}
	for _, c := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // vodctl's default --timeout
		start := time.Now()
		ack, err := c.call(ctx, c.req)
		took := time.Since(start)
		cancel()
		want := c.want + "the store (Redis) did not answer within 5s: try again"
		if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), want) {
			t.Errorf("%s, Redis stalled, within vodctl's 10s (took %v): %v %v; want UNAVAILABLE %q", c.name, took.Round(time.Millisecond), ack, err, want)
		}
	}
	// The calls took 5 s each: an order sent is in the node's queue.
	for drained := false; !drained; {
		select {
		case cmd := <-n.cmds:
			if p := cmd.GetPrefetch(); p != nil && p.GetTitleId() == "t3" {
				t.Errorf("prefetch refused (UNAVAILABLE) was sent to the node: %v", cmd)
			}
			if ev := cmd.GetEvict(); ev != nil && ev.GetTitleId() == "t1" {
				t.Errorf("eviction refused (UNAVAILABLE) was sent to the node: %v", cmd)
			}
		default:
			drained = true
		}
	}
	srv.Resume()
	rd := open()
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer rcancel()
	if err := rd.PutState(rctx, "probe", []byte("x")); err != nil {
		t.Fatalf("Redis resumed: %v", err)
	}
	if b, err := rd.State(rctx, statePrefetches); err == nil && strings.Contains(string(b), "t3") {
		t.Errorf("prefetch order refused (UNAVAILABLE) is in the store after Redis ran again: %s", b)
	}
	if b, err := rd.State(rctx, stateEvictHolds); err == nil && strings.Contains(string(b), "t1") {
		t.Errorf("eviction hold refused (UNAVAILABLE) is in the store after Redis ran again: %s", b)
	}
	e.m.mu.Lock()
	holds := e.m.rep.Holds(time.Now())
	e.m.mu.Unlock()
	if len(holds) != 0 {
		t.Errorf("eviction holds after a refused eviction: %v; want none", holds)
	}
}
