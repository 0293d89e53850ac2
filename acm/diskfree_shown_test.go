package acm

import (
	"strings"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// vodctl nodes and vodcluster_node_disk_free_bytes show the free disk the
// node last reported. A fill placed on a node with less free disk than
// the title (room made by evicting a copy) took the title's bytes off the
// figure: -0.5 MB, shown "unknown" by vodctl and negative in the metric.
func TestDiskFreeShownIsTheNodesReport(t *testing.T) {
	e := newManager(t, "", withMetrics)
	e.startNode("n1", nodeOpts{disk: 200e6, diskFree: 1e6,
		titles: []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}})
	id := e.admitOne("t2")
	if s := e.session(id); s == nil || s.NodeId != "n1" {
		t.Fatalf("the fill of t2: %+v, want it on n1", s)
	}
	// Its next reports still list t1 (this node carries out no order) and
	// not t2's fill.
	after := e.reports("n1") + 2
	waitFor(t, 5*time.Second, "two more reports of n1", func() bool { return e.reports("n1") >= after })
	if free := e.nodeInfo("n1").DiskFreeBytes; free != 1e6 {
		t.Fatalf("n1's free disk shown %d bytes, want 1000000 (its report)", free)
	}
	if text := scrape(t, e.m); !strings.Contains(text, `vodcluster_node_disk_free_bytes{node="n1"} 1e+06`+"\n") {
		t.Fatalf("vodcluster_node_disk_free_bytes of n1 is not its report, 1e+06:\n%s", grepLines(text, "vodcluster_node_disk_free_bytes"))
	}
}

// grepLines returns the lines of text that contain sub.
func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
