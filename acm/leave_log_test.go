package acm

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// A node that says goodbye with sessions on it (it is stopping: their
// ENDED reports follow) is logged at info; only a node that died with
// sessions (its heartbeats stopped) is warned of as orphaning them. A
// clean stop of `vodcluster up` logged the warning for every node.
func TestNodeLeavingWithSessionsIsNoWarning(t *testing.T) {
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) { m.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	stored := []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}
	n1 := e.startNode("n1", nodeOpts{titles: stored})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("DESCRIBE: %d, want 302", res.StatusCode)
	}
	n1.leave()
	waitFor(t, 5*time.Second, "the goodbye's log line", func() bool { return strings.Contains(log.String(), "node left with sessions") })
	if strings.Contains(log.String(), "sessions orphaned") {
		t.Errorf("a node that left is warned of as orphaning its sessions:\n%s", log.String())
	}

	n2 := e.startNode("n2", nodeOpts{titles: stored})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("DESCRIBE: %d, want 302", res.StatusCode)
	}
	n2.stop()
	waitFor(t, 10*time.Second, "the death's warning", func() bool {
		return strings.Contains(log.String(), `level=WARN msg="sessions orphaned`) && strings.Contains(log.String(), "node=n2")
	})
}
