package main

import (
	"context"
	"strings"
	"testing"

	v1 "vodcluster/proto/vodcluster/v1"
)

// vodctl nodes against a manager with no node registered says why there
// is no row and what to check, on standard error: it printed its header
// alone and exited 0, which reads as a cluster with nothing to show. A
// manager with a node gets no such note. Against a real manager and node.
func TestNodesEmptySaysWhy(t *testing.T) {
	dir := t.TempDir()
	origin := startOrigin(t, dir)
	m, admin := startManager(t, dir, origin)
	run := func() (string, string) {
		t.Helper()
		cmd := newRoot()
		var out, errOut strings.Builder
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs([]string{"--manager", m.GRPCAddr(), "nodes"})
		if err := cmd.Execute(); err != nil {
			t.Fatalf("nodes: %v\nstandard error %q", err, errOut.String())
		}
		return out.String(), errOut.String()
	}
	out, errOut := run()
	if strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.HasPrefix(out, "NODE") {
		t.Fatalf("nodes with none registered:\n%s", out)
	}
	for _, want := range []string{"no node has registered with this manager", "start the nodes", "manager: address", "cluster secret"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("standard error %q: want %q in it", errOut, want)
		}
	}

	startNode(t, dir, "node-1", m, origin)
	waitUntil(t, "node-1 registered", func() bool {
		r, err := admin.ListNodes(context.Background(), &v1.ListNodesRequest{})
		return err == nil && len(r.Nodes) == 1
	})
	out, errOut = run()
	if !strings.Contains(out, "node-1") || errOut != "" {
		t.Fatalf("nodes with node-1 registered:\n%s\nstandard error %q", out, errOut)
	}
}

// On a standby of a pair with no node registered, vodctl nodes printed
// two notes, the one for a manager without nodes and the standby's, that
// said the same twice over. It prints the standby's alone, which says no
// node has registered with it and to ask the active manager; with a node
// registered the standby's note is the usual one.
func TestNodesEmptyStandbyOneNote(t *testing.T) {
	out := runVodctl(t, emptyStandbyAdmin{}, "nodes")
	var notes []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "no node") || strings.Contains(l, "note:") {
			notes = append(notes, l)
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "does not hold the planner lock") ||
		!strings.Contains(notes[0], "no node has registered with it") || !strings.Contains(notes[0], "ask the active manager") ||
		strings.Contains(notes[0], "start the nodes") {
		t.Fatalf("vodctl nodes on a standby without nodes: want one note naming the standby and no node:\n%s", out)
	}
	if out := runVodctl(t, standbyAdmin{standby: true}, "nodes"); strings.Contains(out, "no node has registered") {
		t.Fatalf("vodctl nodes on a standby with a node:\n%s", out)
	}
}

// emptyStandbyAdmin is standbyAdmin, a standby, with no node registered.
type emptyStandbyAdmin struct{ standbyAdmin }

func (emptyStandbyAdmin) ListNodes(context.Context, *v1.ListNodesRequest) (*v1.ListNodesResponse, error) {
	return &v1.ListNodesResponse{Standby: true}, nil
}
