package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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

func (a standbyAdmin) ListPopularity(context.Context, *v1.ListPopularityRequest) (*v1.ListPopularityResponse, error) {
	return &v1.ListPopularityResponse{Standby: a.standby}, nil
}

func (a standbyAdmin) GetPolicy(context.Context, *v1.GetPolicyRequest) (*v1.PolicyInfo, error) {
	return &v1.PolicyInfo{Policy: "lall", Standby: a.standby}, nil
}

// Against the standby of a pair, vodctl sessions, nodes, fills, placement, popularity,
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
		{[]string{"popularity"}, "the popularity it restored from the store"},
		{[]string{"node", "n-gone"}, "registered only with the active manager as not registered"},
		{[]string{"node", "n-gone", "--drain"}, "registered only with the active manager as not registered"},
		{[]string{"--json", "node", "n-gone"}, "registered only with the active manager as not registered"},
		{[]string{"node", "n-here"}, "registered only with the active manager as not registered"},
	} {
		args := c.args
		out := runVodctl(t, standbyAdmin{standby: true}, args...)
		// A lone manager whose store stalled loses the lock too: it was
		// told to ask an active manager there is none of.
		if !strings.Contains(out, "does not hold the planner lock") || !strings.Contains(out, "ask the active manager") || !strings.Contains(out, c.shows) ||
			!strings.Contains(out, "whose store does not answer") || !strings.Contains(out, "see that the store answers") {
			t.Errorf("vodctl %v against a standby:\n%s", args, out)
		}
		if out := runVodctl(t, standbyAdmin{}, args...); strings.Contains(out, "planner lock") {
			t.Errorf("vodctl %v against the active manager:\n%s", args, out)
		}
	}
}

// notFoundAdmin is standbyAdmin where no node has a stored setting.
type notFoundAdmin struct{ standbyAdmin }

func (notFoundAdmin) SetNode(_ context.Context, r *v1.SetNodeRequest) (*v1.NodeInfo, error) {
	return nil, status.Errorf(codes.NotFound, "node %q is not registered and has no stored setting", r.GetNodeId())
}

// TestStandbyNodeNotFoundNoted: vodctl node ID against the standby of a
// pair, for a node registered only with the active manager and without a
// stored setting (most nodes), answered NOT_FOUND "not registered with
// the manager and has no stored setting" without the standby's note,
// read as a node that is not in the cluster. It now says the manager
// does not hold the planner lock and to ask the active one; against the
// active manager the answer is as before.
func TestStandbyNodeNotFoundNoted(t *testing.T) {
	for _, standby := range []bool{true, false} {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		v1.RegisterAdminServer(srv, notFoundAdmin{standbyAdmin{standby: standby}})
		go srv.Serve(lis)
		cmd := newRoot()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs([]string{"--manager", lis.Addr().String(), "--token", "", "node", "n-gone"})
		err = cmd.Execute()
		srv.Stop()
		msg := fmt.Sprint(err)
		if err == nil || status.Code(err) != codes.NotFound || !strings.HasSuffix(msg, "[NOT_FOUND]") || !strings.Contains(msg, "has no stored setting") {
			t.Fatalf("vodctl node n-gone (standby %v): %v\n%s; want NotFound", standby, err, out.String())
		}
		if noted := strings.Contains(msg, "does not hold the planner lock") && strings.Contains(msg, "ask the active manager"); noted != standby {
			t.Errorf("vodctl node n-gone against a manager with standby %v: %s", standby, msg)
		}
	}
}
