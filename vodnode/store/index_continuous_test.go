package store

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"vodcluster/cdp/tsindex"
)

// TestIndexWithClockJumpsBuiltAgain: a stored copy whose index was saved
// before PCR discontinuities were absorbed (its clock going back at a
// splice) is indexed again at Open, its version kept: its clock is then
// continuous, and its duration the title's.
func TestIndexWithClockJumpsBuiltAgain(t *testing.T) {
	dir := t.TempDir()
	data := append(sample(t), sample(t)...) // a splice: the PCR starts again
	ts := filepath.Join(dir, "t1.ts")
	if err := os.WriteFile(ts, data, 0o644); err != nil {
		t.Fatal(err)
	}
	idx, err := tsindex.BuildFrom(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	// As indexed before: the second half's PCRs as in the file, back.
	old := *idx
	old.PCRs = append([]tsindex.PCRPoint(nil), idx.PCRs...)
	for i := range old.PCRs {
		if old.PCRs[i].Offset >= int64(len(data)/2) {
			old.PCRs[i].PCR -= old.PCRs[len(old.PCRs)-1].PCR / 2
		}
	}
	if old.Continuous() {
		t.Fatal("the old index made continuous: the test's splice is wrong")
	}
	st, err := os.Stat(ts)
	if err != nil {
		t.Fatal(err)
	}
	if err := saveIndex(filepath.Join(dir, "t1.idx"), st, &old, "v1"); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	titles := s.Titles()
	if len(titles) != 1 || titles[0].Version != "v1" {
		t.Fatalf("titles %+v: want t1, its version v1 kept", titles)
	}
	s.mu.Lock()
	v := s.titles["t1"].View()
	s.mu.Unlock()
	if !v.Index.Continuous() || v.Index.PCRJumps != 1 {
		t.Errorf("the index at Open: continuous %v, %d jumps absorbed; want it built again (1 jump)", v.Index.Continuous(), v.Index.PCRJumps)
	}
}
