package main

import (
	"bytes"
	"encoding/json"
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
	var out bytes.Buffer
	nodesTable(&out, nodes)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), out.String())
	}
	head := strings.Split(lines[0], "\t")
	if head[len(head)-1] != "ORIGIN" || head[len(head)-2] != "SITE" {
		t.Fatalf("header %q: want SITE then ORIGIN last", lines[0])
	}
	want := map[string]string{"n1": "yes", "n2": "none"}
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		if len(f) != len(head) || f[len(f)-1] != want[f[0]] {
			t.Fatalf("%s: ORIGIN %q, want %q (row %q)", f[0], f[len(f)-1], want[f[0]], l)
		}
	}
	out.Reset()
	nodesTable(&out, nodes[:1])
	if strings.Contains(out.String(), "ORIGIN") {
		t.Fatalf("ORIGIN shown with every node having an origin:\n%s", out.String())
	}
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
