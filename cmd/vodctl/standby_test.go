package main

import (
	"context"
	"strings"
	"testing"

	v1 "vodcluster/proto/vodcluster/v1"
)

// standbyAdmin answers the lists as a manager without the planner lock
// (standby), or as the active one.
type standbyAdmin struct {
	v1.UnimplementedAdminServer
	standby bool
}

func (a standbyAdmin) ListSessions(context.Context, *v1.ListSessionsRequest) (*v1.ListSessionsResponse, error) {
	return &v1.ListSessionsResponse{Standby: a.standby}, nil
}

func (a standbyAdmin) ListNodes(context.Context, *v1.ListNodesRequest) (*v1.ListNodesResponse, error) {
	return &v1.ListNodesResponse{Nodes: []*v1.NodeInfo{{NodeId: "n-here", RtspAddr: "127.0.0.1:554", Alive: true}}, Standby: a.standby}, nil
}

// SetNode answers for a node not registered: its stored setting.
func (a standbyAdmin) SetNode(_ context.Context, r *v1.SetNodeRequest) (*v1.NodeInfo, error) {
	return &v1.NodeInfo{NodeId: r.GetNodeId(), Draining: r.GetDraining(), Standby: a.standby}, nil
}

func (a standbyAdmin) ListFills(context.Context, *v1.ListFillsRequest) (*v1.ListFillsResponse, error) {
	return &v1.ListFillsResponse{Standby: a.standby}, nil
}

func (a standbyAdmin) ListPlacement(context.Context, *v1.ListPlacementRequest) (*v1.ListPlacementResponse, error) {
	return &v1.ListPlacementResponse{Standby: a.standby}, nil
}

func (a standbyAdmin) GetPolicy(context.Context, *v1.GetPolicyRequest) (*v1.PolicyInfo, error) {
	return &v1.PolicyInfo{Policy: "lall", Standby: a.standby}, nil
}

// Against the standby of a pair, vodctl sessions, nodes, fills, placement,
// policy and node ID say so beside their tables (and their JSON): they
// printed empty tables, read as a cluster without nodes or viewers
// (placement: no copy anywhere; policy: a storage planner that never
// planned; node: a node registered with the active manager as not
// registered, by its stored setting). Against
// the active manager nothing is added.
func TestStandbyListsNoted(t *testing.T) {
	for _, c := range []struct {
		args  []string
		shows string // what the note says the standby's answer is
	}{
		{[]string{"sessions"}, "only the nodes registered with it"},
		{[]string{"nodes"}, "only the nodes registered with it"},
		{[]string{"fills"}, "only the nodes registered with it"},
		{[]string{"--json", "sessions"}, "only the nodes registered with it"},
		{[]string{"placement"}, "only the copies and partial fills of the nodes registered with it"},
		{[]string{"--json", "placement"}, "only the copies"},
		{[]string{"policy"}, "its storage planner does not run"},
		{[]string{"node", "n-gone"}, "registered only with the active manager as not registered"},
		{[]string{"node", "n-gone", "--drain"}, "registered only with the active manager as not registered"},
		{[]string{"--json", "node", "n-gone"}, "registered only with the active manager as not registered"},
		{[]string{"node", "n-here"}, "registered only with the active manager as not registered"},
	} {
		args := c.args
		out := runVodctl(t, standbyAdmin{standby: true}, args...)
		if !strings.Contains(out, "does not hold the planner lock") || !strings.Contains(out, "ask the active manager") || !strings.Contains(out, c.shows) {
			t.Errorf("vodctl %v against a standby:\n%s", args, out)
		}
		if out := runVodctl(t, standbyAdmin{}, args...); strings.Contains(out, "planner lock") {
			t.Errorf("vodctl %v against the active manager:\n%s", args, out)
		}
	}
}
