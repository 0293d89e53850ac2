package acm

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// An operator's answer naming a failed read of Redis (stopped: the
// connection refused) read "store: acm: load node settings: store:
// redis: ...": the package names of each wrapping stacked. It reads
// "load node settings: redis: state node-settings: ..." now.
func TestStoreReadErrorInAnswerHasOnePrefixChain(t *testing.T) {
	e, _, srv := leaderOnRedis(t)
	srv.Stop()
	_, err := e.admin.SetNode(context.Background(), &pb.SetNodeRequest{NodeId: "n9", Draining: ptr(true)})
	msg := status.Convert(err).Message()
	if status.Code(err) != codes.Unavailable || !strings.Contains(msg, "its stored setting cannot be read (load node settings: redis: state node-settings: ") {
		t.Fatalf("node setting, Redis stopped: %v; want UNAVAILABLE with the chain 'load node settings: redis: state node-settings: ...'", err)
	}
	for _, bad := range []string{"acm:", "store: ", "redis: redis"} {
		if strings.Contains(msg, bad) {
			t.Errorf("node setting, Redis stopped: %q; want no %q in the chain", msg, bad)
		}
	}
}
