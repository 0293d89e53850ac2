package main

import (
	"context"
	"strings"
	"testing"

	v1 "vodcluster/proto/vodcluster/v1"
)

// orphanAdmin lists node-2 dead with 3 orphaned sessions and node-1 alive
// with 2 sessions, as a manager does after node-2 died mid-play.
type orphanAdmin struct{ v1.UnimplementedAdminServer }

func (orphanAdmin) ListNodes(context.Context, *v1.ListNodesRequest) (*v1.ListNodesResponse, error) {
	return &v1.ListNodesResponse{Nodes: []*v1.NodeInfo{
		{NodeId: "node-1", RtspAddr: "a:554", Alive: true, Weight: 100, Sessions: 2},
		{NodeId: "node-2", RtspAddr: "b:554", Weight: 100, OrphanedSessions: 3},
	}}, nil
}

// vodctl nodes shows a dead node's orphaned sessions beside its SESSIONS
// (it showed 0 while vodctl sessions listed them orphaned), as vodctl node
// does; a node with none shows its count alone.
func TestNodesShowOrphanedSessions(t *testing.T) {
	run := vodctlAgainst(t, orphanAdmin{})
	out, err := run("nodes")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 3 || !strings.Contains(lines[2], " 0 (3 orphaned) ") || strings.Contains(lines[1], "orphaned") {
		t.Errorf("vodctl nodes:\n%s", out)
	}
	if out, err := run("node", "node-2"); err != nil || !strings.Contains(out, "0 (3 orphaned)") {
		t.Errorf("vodctl node node-2: %v\n%s", err, out)
	}
}
