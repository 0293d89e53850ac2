package main

import (
	"bytes"
	"strings"
	"testing"

	v1 "vodcluster/proto/vodcluster/v1"
)

// vodctl nodes shows a UDP column when a node sends over TCP only ("no"
// for it, "yes" for the others), none otherwise.
func TestNodesTableShowsTCPOnly(t *testing.T) {
	nodes := []*v1.NodeInfo{
		{NodeId: "n1", RtspAddr: "127.0.0.1:1"},
		{NodeId: "n2", RtspAddr: "127.0.0.1:2", TcpOnly: true},
	}
	var out bytes.Buffer
	nodesTable(&out, nodes)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), out.String())
	}
	head := strings.Split(lines[0], "\t")
	if head[len(head)-1] != "UDP" {
		t.Fatalf("header %q: want UDP last", lines[0])
	}
	want := map[string]string{"n1": "yes", "n2": "no"}
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		if len(f) != len(head) || f[len(f)-1] != want[f[0]] {
			t.Fatalf("%s: UDP %q, want %q (row %q)", f[0], f[len(f)-1], want[f[0]], l)
		}
	}
	out.Reset()
	nodesTable(&out, nodes[:1])
	if strings.Contains(out.String(), "UDP") {
		t.Fatalf("UDP shown with every node serving UDP:\n%s", out.String())
	}
}
