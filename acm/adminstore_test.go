package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestAdminWritesRedisStalled: the operator's changes on the active
// manager while its Redis does not answer (the process stopped). Each
// waited up to 10 s for the store, vodctl's own default --timeout, so
// vodctl ended in its own DeadlineExceeded instead of the manager's
// answer. Each now waits at most adminStoreWait (5 s) and answers
// UNAVAILABLE saying the store did not answer within it. The planner lock
// is held for a minute, so that the manager stays the active one
// throughout (no notLeader answer).
func TestAdminWritesRedisStalled(t *testing.T) {
	open, srv := sharedRedis(t)
	e := newManagerWith(t, "", testTitles, func(m *Manager) {
		onShared(open(), nil, time.Minute)(m)
		m.LeaderTTL = time.Minute
	})
	if !e.m.Leader() {
		t.Fatal("the manager does not hold the planner lock")
	}
	drain := true
	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"suspend", func(ctx context.Context) error {
			_, err := e.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "alice", DurationS: 60})
			return err
		}},
		{"node settings", func(ctx context.Context) error {
			_, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n-gone", Draining: &drain})
			return err
		}},
		{"node shown", func(ctx context.Context) error {
			_, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n-gone"})
			return err
		}},
		{"forget", func(ctx context.Context) error {
			_, err := e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n-gone"})
			return err
		}},
		{"pin", func(ctx context.Context) error {
			_, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: testTitles[0].GetId()})
			return err
		}},
		{"policy", func(ctx context.Context) error {
			_, err := e.admin.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: "rr"})
			return err
		}},
	}
	srv.Pause(t)
	for _, c := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // vodctl's default --timeout
		start := time.Now()
		err := c.call(ctx)
		took := time.Since(start)
		cancel()
		msg := status.Convert(err).Message()
		if status.Code(err) != codes.Unavailable || !strings.Contains(msg, "the store (Redis) did not answer within 5s: try again") {
			t.Errorf("%s, Redis stalled, within vodctl's 10s (took %v): %v; want UNAVAILABLE 'the store (Redis) did not answer within 5s: try again'", c.name, took.Round(time.Millisecond), err)
		}
	}
}
