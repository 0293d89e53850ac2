package store

import (
	"bytes"
	"encoding/gob"
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
	idx, st := storeCopy(t, dir, "t1", data)
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

// TestIndexBeforePTSJumpsBuiltAgain: a stored copy whose index was saved
// before presentation-time jumps were absorbed (tsindex.Format 2), of a
// title with a 2 s intro spliced before it, is indexed again at Open (its
// keyframes' times went back at the join: a seek there landed 2 s off),
// though its clock is continuous; an index of the same age of a title
// without a splice is kept as it is (not every copy read again), and so
// is one saved under the current Format, whatever its times (a title the
// check would flag without a jump is read again once, not at each start).
func TestIndexBeforePTSJumpsBuiltAgain(t *testing.T) {
	dir := t.TempDir()
	clip := sample(t)
	var intro []byte
	x0, err := tsindex.BuildFrom(bytes.NewReader(clip))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range x0.PCRs {
		if float64(p.PCR-x0.PCRs[0].PCR)/tsindex.PCRHz >= 2 {
			intro = clip[:p.Offset]
			break
		}
	}
	spliced := append(bytes.Clone(intro), clip...)
	titles := map[string][]byte{"spliced": spliced, "plain": clip, "current": spliced}
	for id, data := range titles {
		idx, st := storeCopy(t, dir, id, data)
		// As indexed before Format 2: the stream's own times, no jump.
		old := *idx
		old.Keyframes, old.PTSJumps = nil, nil
		for _, k := range idx.Keyframes {
			k.Jump = 0
			old.Keyframes = append(old.Keyframes, k)
		}
		old.PCRJumps = 7 // marks the old index: a new one counts what it absorbed
		if id == "current" {
			if err := saveIndex(filepath.Join(dir, id+".idx"), st, &old, "v-"+id); err != nil {
				t.Fatal(err)
			}
			continue
		}
		writeOldIndex(t, filepath.Join(dir, id+".idx"), indexFile{Size: st.Size(), ModUnix: st.ModTime().UnixNano(), Index: old, Version: "v-" + id})
	}
	s, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	views := map[string]*View{}
	s.mu.Lock()
	for id, tt := range s.titles {
		views[id] = tt.View()
	}
	s.mu.Unlock()
	if v := views["spliced"]; v == nil || len(v.Index.PTSJumps) != 1 || v.Index.PCRJumps == 7 {
		t.Errorf("the spliced title's old index at Open: want it built again, its jump absorbed")
	}
	for _, id := range []string{"plain", "current"} {
		if v := views[id]; v == nil || v.Index.PCRJumps != 7 {
			t.Errorf("the %s title's index at Open: want it kept as saved", id)
		}
	}
	for _, st := range s.Titles() {
		if st.Version != "v-"+st.ID {
			t.Errorf("%s: version %q, want its saved one kept", st.ID, st.Version)
		}
	}
	// built again, it is saved under the current Format: kept at the next Open
	if x, ok := readIndex(filepath.Join(dir, "spliced.idx")); !ok || x.Format != tsindex.Format || len(x.Index.PTSJumps) != 1 {
		t.Errorf("the index saved again: %v, format %d", ok, x.Format)
	}
}

// writeOldIndex writes x as an index file written before its Format was
// saved (Format 0).
func writeOldIndex(t *testing.T, path string, x indexFile) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := gob.NewEncoder(f).Encode(x); err != nil {
		t.Fatal(err)
	}
}

// storeCopy writes data as the stored copy id.ts in dir and returns its
// index, as built now, and the file's FileInfo (what a saved index is
// checked against).
func storeCopy(t *testing.T, dir, id string, data []byte) (*tsindex.Index, os.FileInfo) {
	t.Helper()
	ts := filepath.Join(dir, id+".ts")
	if err := os.WriteFile(ts, data, 0o644); err != nil {
		t.Fatal(err)
	}
	idx, err := tsindex.BuildFrom(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(ts)
	if err != nil {
		t.Fatal(err)
	}
	return idx, st
}
