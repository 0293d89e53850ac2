package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	v1 "vodcluster/proto/vodcluster/v1"
)

// vodctl nodes shows an ORIGIN column when a node has no origin ("none"
// for it, "yes" for the others), none otherwise; --json carries noOrigin
// for every node.
func TestNodesTableShowsNoOrigin(t *testing.T) {
	nodes := []*v1.NodeInfo{
		{NodeId: "n1", RtspAddr: "127.0.0.1:1", Site: "east"},
		{NodeId: "n2", RtspAddr: "127.0.0.1:2", NoOrigin: true},
	}
	lastColumns(t, nodes, []string{"SITE", "ORIGIN"}, map[string]string{"n1": "yes", "n2": "none"})
	for _, n := range nodes {
		b, err := adminJSON(n)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if v, ok := got["noOrigin"]; !ok || v != n.NoOrigin {
			t.Fatalf("--json of %s: noOrigin %v (present %v), want %v:\n%s", n.NodeId, v, ok, n.NoOrigin, b)
		}
	}
}

// lastColumns checks that vodctl nodes for nodes ends its header with
// cols and its rows with want[node] in the last column, and that without
// the last node of nodes (which needs it) the last column is not shown.
func lastColumns(t *testing.T, nodes []*v1.NodeInfo, cols []string, want map[string]string) {
	t.Helper()
	var out bytes.Buffer
	nodesTable(&out, nodes)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(nodes)+1 {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(nodes)+1, out.String())
	}
	head := strings.Split(lines[0], "\t")
	if !slices.Equal(head[len(head)-len(cols):], cols) {
		t.Fatalf("header %q: want %v last", lines[0], cols)
	}
	col := cols[len(cols)-1]
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		if len(f) != len(head) || f[len(f)-1] != want[f[0]] {
			t.Fatalf("%s: %s %q, want %q (row %q)", f[0], col, f[len(f)-1], want[f[0]], l)
		}
	}
	out.Reset()
	nodesTable(&out, nodes[:len(nodes)-1])
	if strings.Contains(out.String(), col) {
		t.Fatalf("%s shown with no node needing it:\n%s", col, out.String())
	}
}
