package vodnode

import (
	"log/slog"
	"testing"

	"google.golang.org/grpc/codes"

	pb "vodcluster/proto/vodcluster/v1"
)

// A node the manager took for dead reports, once it resumes, the ENDED of
// each session the manager ended meanwhile, each rejected NotFound: one
// warning a session said nothing to act on. Those are debug; any other
// rejection stays a warning.
func TestRejectedEventLevel(t *testing.T) {
	ended := &pb.SessionEvent{Kind: pb.SessionEvent_KIND_ENDED}
	started := &pb.SessionEvent{Kind: pb.SessionEvent_KIND_STARTED}
	for _, c := range []struct {
		ev   *pb.SessionEvent
		code codes.Code
		want slog.Level
	}{
		{ended, codes.NotFound, slog.LevelDebug},
		{started, codes.NotFound, slog.LevelWarn},
		{ended, codes.InvalidArgument, slog.LevelWarn},
		{ended, codes.FailedPrecondition, slog.LevelWarn},
	} {
		if got := rejectedEventLevel(c.ev, c.code); got != c.want {
			t.Errorf("%v rejected %v: level %v, want %v", c.ev.GetKind(), c.code, got, c.want)
		}
	}
}
