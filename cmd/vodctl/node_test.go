package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	v1 "vodcluster/proto/vodcluster/v1"
)

// nodeAdmin lists two nodes and counts SetNode calls with a change (it
// changes nothing); one without, as the manager, shows the node: here
// none is stored (NOT_FOUND).
type nodeAdmin struct {
	v1.UnimplementedAdminServer
	sets *atomic.Int32
}

func (nodeAdmin) ListNodes(context.Context, *v1.ListNodesRequest) (*v1.ListNodesResponse, error) {
	return &v1.ListNodesResponse{Nodes: []*v1.NodeInfo{
		{NodeId: "n1", RtspAddr: "127.0.0.1:1", Alive: true, Weight: 100, Titles: 3, Site: "east"},
		{NodeId: "n2", RtspAddr: "127.0.0.1:2", Alive: true, Draining: true, Weight: 250, Sessions: 7, FillSessions: 2,
			ReservedBps: 56_000_000, EgressBps: 60_000_000, Load: 0.42, Titles: 5, Overload: 0.95,
			Capacity: &v1.NodeCapacity{EgressBps: 1_000_000_000, DiskBytes: 4_000_000_000}, DiskFreeBytes: 1_500_000_000, Site: "west"},
	}}, nil
}

func (a nodeAdmin) SetNode(_ context.Context, r *v1.SetNodeRequest) (*v1.NodeInfo, error) {
	if r.Weight == nil && r.Draining == nil && r.Overload == nil {
		return nil, status.Errorf(codes.NotFound, "node %q is not registered and has no stored setting", r.NodeId)
	}
	a.sets.Add(1)
	return &v1.NodeInfo{NodeId: r.NodeId}, nil
}

// vodctl node NODE without a change flag shows the node: its row of
// vodctl nodes and its overload threshold, or its NodeInfo with --json;
// an unknown node is NOT_FOUND; nothing is changed.
func TestNodeWithoutChangeShowsIt(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sets := new(atomic.Int32)
	srv := grpc.NewServer()
	v1.RegisterAdminServer(srv, nodeAdmin{sets: sets})
	go srv.Serve(lis)
	defer srv.Stop()
	run := func(args ...string) (string, error) {
		cmd := newRoot()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"--manager", lis.Addr().String(), "--token", ""}, args...))
		err := cmd.Execute()
		return out.String(), err
	}
	all, err := run("nodes")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(all), "\n")
	if len(lines) != 3 {
		t.Fatalf("nodes:\n%s", all)
	}
	out, err := run("node", "n2")
	if err != nil {
		t.Fatalf("node n2: %v\n%s", err, out)
	}
	got := strings.Split(strings.TrimSpace(out), "\n")
	fields := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	if len(got) != 3 || fields(got[0]) != fields(lines[0]) || fields(got[1]) != fields(lines[2]) {
		t.Fatalf("node n2:\n%s\nnot n2's row of nodes:\n%s", out, all)
	}
	if !strings.HasPrefix(fields(got[1]), "n2 127.0.0.1:2 true true 250 7 2 56.0 60.0 1000.0 0.42 5 1.50 GB 4.00 GB 0 0 B west") ||
		got[2] != "overload 0.95" {
		t.Fatalf("node n2:\n%s", out)
	}
	js, err := run("--json", "node", "n1")
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		NodeID string `json:"nodeId"`
		Site   string `json:"site"`
	}
	if err := json.Unmarshal([]byte(js), &info); err != nil || info.NodeID != "n1" || info.Site != "east" {
		t.Fatalf("--json node n1: %v\n%s", err, js)
	}
	out, err = run("node", "nope")
	if status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), `"nope"`) || out != "" {
		t.Fatalf("unknown node: %v\n%s", err, out)
	}
	if n := sets.Load(); n != 0 {
		t.Fatalf("showing a node changed it %d times", n)
	}
	// A change flag still changes it.
	if _, err := run("node", "n2", "--undrain"); err != nil || sets.Load() != 1 {
		t.Fatalf("node n2 --undrain: %v, %d SetNode calls", err, sets.Load())
	}
}

// drainAdmin records the draining of the last SetNode it was asked.
type drainAdmin struct {
	nodeAdmin
	draining *atomic.Pointer[bool]
}

func (a drainAdmin) SetNode(ctx context.Context, r *v1.SetNodeRequest) (*v1.NodeInfo, error) {
	a.draining.Store(r.Draining)
	return a.nodeAdmin.SetNode(ctx, r)
}

// vodctl node NODE --drain=false puts the node back in service as
// --undrain does (it changed nothing: the node was only shown, still
// draining, with exit status 0), --undrain=false drains it, and flags
// that contradict each other are refused.
func TestNodeDrainFlagValues(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sets := new(atomic.Int32)
	draining := new(atomic.Pointer[bool])
	srv := grpc.NewServer()
	v1.RegisterAdminServer(srv, drainAdmin{nodeAdmin{sets: sets}, draining})
	go srv.Serve(lis)
	defer srv.Stop()
	for _, tc := range []struct {
		flags []string
		want  string // draining asked: "true", "false", "none" (no SetNode), "error"
	}{
		{[]string{"--drain"}, "true"},
		{[]string{"--drain=true"}, "true"},
		{[]string{"--drain=false"}, "false"},
		{[]string{"--undrain"}, "false"},
		{[]string{"--undrain=false"}, "true"},
		{[]string{"--drain=false", "--undrain"}, "false"},
		{[]string{"--drain", "--undrain"}, "error"},
		{[]string{"--drain=false", "--undrain=false"}, "error"},
		{nil, "none"},
	} {
		draining.Store(nil)
		before := sets.Load()
		cmd := newRoot()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"--manager", lis.Addr().String(), "--token", "", "node", "n2"}, tc.flags...))
		err := cmd.Execute()
		got := "none"
		switch d := draining.Load(); {
		case err != nil:
			got = "error"
		case sets.Load() != before && d != nil:
			got = fmt.Sprint(*d)
		case sets.Load() != before:
			got = "SetNode without draining"
		}
		if got != tc.want {
			t.Errorf("node n2 %v: draining %s, want %s (%v)\n%s", tc.flags, got, tc.want, err, out.String())
		}
	}
}
