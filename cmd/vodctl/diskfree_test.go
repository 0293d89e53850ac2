package main

import (
	"bytes"
	"strings"
	"testing"

	v1 "vodcluster/proto/vodcluster/v1"
)

// vodctl nodes shows a node's free disk it could not measure (-1) as
// "unknown", not as a negative size; a measured one, 0 included, as a size.
func TestNodesTableUnknownDiskFree(t *testing.T) {
	var out bytes.Buffer
	nodesTable(&out, []*v1.NodeInfo{
		{NodeId: "n1", RtspAddr: "127.0.0.1:1", DiskFreeBytes: -1},
		{NodeId: "n2", RtspAddr: "127.0.0.1:2", DiskFreeBytes: 0},
		{NodeId: "n3", RtspAddr: "127.0.0.1:3", DiskFreeBytes: 1_500_000_000},
	})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4:\n%s", len(lines), out.String())
	}
	want := map[string]string{"n1": "unknown", "n2": "0 B", "n3": "1.50 GB"}
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		if got := f[12]; got != want[f[0]] {
			t.Fatalf("%s: DISK FREE %q, want %q (row %q)", f[0], got, want[f[0]], l)
		}
	}
	if strings.Contains(out.String(), "-") {
		t.Fatalf("a negative free disk shown:\n%s", out.String())
	}
}
