package acm

import (
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	pb "vodcluster/proto/vodcluster/v1"
)

// A viewer placed on a node whose room for the fill is a prefetch the
// node stops for it (StoredTitle.preemptible) is answered at once: the
// manager counts that prefetch as room when it makes room for the fill,
// rather than waiting for the node's next load report (up to two
// heartbeat intervals) for room no report will show before the viewer
// reaches the node.
func TestFillOnPreemptiblePrefetchNotHeldForAReport(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.Scheduler.HeartbeatInterval = 2 * time.Second })
	n := e.startNode("n1", nodeOpts{disk: 2_000_000, diskFree: 500_000, titles: []*pb.StoredTitle{
		{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 300_000, Filling: true, Prefetch: true, Preemptible: true},
	}})
	n.mute(true)
	defer n.mute(false)
	type answer struct {
		res  *base.Response
		err  error
		took time.Duration
	}
	c := e.dialRTSP()
	done := make(chan answer, 1)
	go func() {
		start := time.Now()
		res, err := c.do(base.Describe, "/vod/t1", basicHeader("demo", "demo"))
		done <- answer{res, err, time.Since(start)}
	}()
	var a answer
	select {
	case a = <-done:
	case <-time.After(2 * time.Second): // the wait for a report is 4 s here
		t.Error("viewer of t1 held for the node's next load report")
		n.mute(false)
		a = <-done
	}
	if a.err != nil || a.res.StatusCode != base.StatusFound {
		t.Fatalf("viewer of t1 on a node whose room is a preemptible prefetch: %v, %v after %v, want 302", a.res, a.err, a.took)
	}
}
