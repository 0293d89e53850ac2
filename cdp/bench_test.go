package cdp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	vodclusterv1 "vodcluster/proto/vodcluster/v1"
)

// benchFetch fetches one whole sample title per iteration over loopback
// gRPC and reports the achieved rate of the title bytes in bit/s.
func benchFetch(b *testing.B, rateBps int64) {
	s := &Server{Dir: sampleDir(b), Listen: "127.0.0.1:0", Logger: quiet, TransferRateBps: rateBps}
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	conn, err := grpcConn(s.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	c := vodclusterv1.NewOriginClient(conn)
	size := s.Catalog().Titles()[0].SizeBytes
	b.SetBytes(size)
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		data, err := fetch(context.Background(), c, &vodclusterv1.FetchRequest{TitleId: "sample-001"}, DefaultChunkBytes)
		if err != nil || int64(len(data)) != size {
			b.Fatalf("fetch: %d bytes, %v", len(data), err)
		}
	}
	b.ReportMetric(float64(s.Stats().BytesSent)*8/time.Since(start).Seconds(), "bit/s")
}

// BenchmarkFetchUnlimited measures the origin's own cost per title served.
func BenchmarkFetchUnlimited(b *testing.B) { benchFetch(b, 0) }

// BenchmarkFetchPaced80M shows the pacing: the reported bit/s stays at or
// just above 80 Mbit/s (the first chunk of each transfer is a burst).
func BenchmarkFetchPaced80M(b *testing.B) { benchFetch(b, 80_000_000) }

// BenchmarkCatalogPoll measures one look of the catalog watch at a
// directory of 10,000 title files without catalog.yaml (what each
// catalog_poll_interval costs the origin; it grows with the titles).
func BenchmarkCatalogPoll(b *testing.B) {
	dir := b.TempDir()
	paths := make([]string, 10_000)
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("title-%05d.ts", i))
		if err := os.WriteFile(paths[i], nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	seen := listState(dir)
	seen.stat(paths)
	for b.Loop() {
		cur := listState(dir)
		cur.stat(paths)
		if !cur.equal(seen) {
			b.Fatal("an unchanged directory looks changed")
		}
	}
}

// BenchmarkCatalogPollNamed measures one look of the catalog watch at a
// directory whose catalog.yaml names 10,000 title files (stateNow: the
// document's stat and every file it names; the document is parsed again
// only when its stat changed).
func BenchmarkCatalogPollNamed(b *testing.B) {
	dir := b.TempDir()
	var doc strings.Builder
	doc.WriteString("titles:\n")
	for i := range 10_000 {
		name := fmt.Sprintf("title-%05d.ts", i)
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(&doc, "  - id: title-%05d\n    file: %s\n", i, name)
	}
	if err := os.WriteFile(filepath.Join(dir, CatalogFile), []byte(doc.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	s := &Server{Dir: dir}
	seen := s.stateNow(nil)
	if len(seen) != 10_001 {
		b.Fatalf("%d paths looked at, want the document and its 10000 files", len(seen))
	}
	for b.Loop() {
		if !s.stateNow(nil).equal(seen) {
			b.Fatal("an unchanged directory looks changed")
		}
	}
}
