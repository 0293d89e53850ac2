package main

import (
	"bytes"
	"strings"
	"testing"
	"text/tabwriter"

	v1 "vodcluster/proto/vodcluster/v1"
)

// sizeText shows a size in the decimal unit that leaves at least one
// integer digit, to three significant digits, at every scale.
func TestSizeText(t *testing.T) {
	for b, want := range map[int64]string{
		-1: "-", 0: "0 B", 999: "999 B", 1000: "1.00 kB", 1_270: "1.27 kB",
		16_000_000: "16.0 MB", 999_499: "999 kB", 999_500: "1.00 MB", 64 << 20: "67.1 MB",
		100_000_000_000: "100 GB", 1_820_000_000_000: "1.82 TB", 1 << 62: "4.61 EB",
		9_996: "10.0 kB", 99_960: "100 kB", 9_994: "9.99 kB",
	} {
		if got := sizeText(b); got != want {
			t.Errorf("sizeText(%d) = %q, want %q", b, got, want)
		}
	}
}

// vodctl nodes shows the 16 MB disks of vodcluster up's sample nodes as
// "16.0 MB", not as 0.016 GB, with the free disk and partials in the
// same units and the columns aligned.
func TestNodesTableSizes(t *testing.T) {
	var out bytes.Buffer
	w := tabwriter.NewWriter(&out, 0, 4, 2, ' ', 0) // as vodctl's tables
	nodesTable(w, []*v1.NodeInfo{
		{NodeId: "n1", RtspAddr: "127.0.0.1:1", DiskFreeBytes: 12_345_678, Capacity: &v1.NodeCapacity{DiskBytes: 16_000_000}, Partials: 1, PartialBytes: 512},
		{NodeId: "n2", RtspAddr: "127.0.0.1:2", DiskFreeBytes: 1_500_000_000_000, Capacity: &v1.NodeCapacity{DiskBytes: 1_820_000_000_000}},
	})
	w.Flush()
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), out.String())
	}
	for i, want := range []string{"DISK FREE", "12.3 MB", "1.50 TB"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d lacks %q:\n%s", i, want, out.String())
		}
	}
	for i, want := range []string{"DISK", "16.0 MB", "1.82 TB"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d lacks %q:\n%s", i, want, out.String())
		}
	}
	if !strings.Contains(lines[1], "512 B") || !strings.Contains(lines[2], "0 B") {
		t.Errorf("partial bytes:\n%s", out.String())
	}
	col := func(l, s string) int { return strings.Index(l, s) }
	if a, b, c := col(lines[0], "DISK FREE"), col(lines[1], "12.3 MB"), col(lines[2], "1.50 TB"); a != b || b != c {
		t.Errorf("DISK FREE not aligned (%d %d %d):\n%s", a, b, c, out.String())
	}
	if strings.Contains(out.String(), "0.016") {
		t.Errorf("GB with decimals:\n%s", out.String())
	}
}

// bitRateText shows a demand to three significant digits with its unit:
// the demo's demands, a few hundred bit/s, read "0.000" (Mbit/s) for
// every title, which hid the order of the rows (0.4608 req/h ranked
// below 0.4575 at a lower bitrate, both shown 0.46 and 0.000).
func TestBitRateText(t *testing.T) {
	for bps, want := range map[float64]string{
		0: "0 bit/s", -1: "0 bit/s", 0.0417: "0.0417 bit/s", 1: "1.00 bit/s", 127.6: "128 bit/s", 131.2: "131 bit/s",
		999.4: "999 bit/s", 999.6: "1.00 kbit/s", 2310: "2.31 kbit/s", 347_222: "347 kbit/s", 1_500_000: "1.50 Mbit/s",
		9_996_000: "10.0 Mbit/s", 2.5e9: "2.50 Gbit/s",
	} {
		if got := bitRateText(bps); got != want {
			t.Errorf("bitRateText(%v) = %q, want %q", bps, got, want)
		}
	}
}
