package store

import (
	"encoding/gob"
	"os"

	"vodcluster/cdp/tsindex"
)

// indexFile is what <id>.idx holds: the index of <id>.ts and the file size
// and modification time it was built from.
type indexFile struct {
	Size    int64
	ModUnix int64 // nanoseconds
	Index   tsindex.Index
	// Version is the origin's version of the bytes (Meta.Version), ""
	// when not known (an index written before versions, or rebuilt from
	// a copy found without one).
	Version string
	// Format is the tsindex.Format Index was built under; 0 in a file
	// written before it was saved (Format 1).
	Format int
}

// loadIndex returns the persisted index at path, and the version of the
// bytes it describes, when it was built from a file of st's size and
// modification time, and under rules that read it as the Builder does
// now: one built before the clock's discontinuities were absorbed (not
// Continuous), or before the presentation times' were (an earlier
// tsindex.Format) where it may hold one, is not returned (ok false), to
// be built again; its version is returned all the same.
func loadIndex(path string, st os.FileInfo) (idx *tsindex.Index, version string, ok bool) {
	x, ok := readIndex(path)
	if !ok || x.Size != st.Size() || x.ModUnix != st.ModTime().UnixNano() { // wall clock: the file's mtime
		return nil, "", false
	}
	if !x.Index.Continuous() || x.Format < tsindex.Format && x.Index.MayHoldPTSJump() {
		return nil, x.Version, false
	}
	return &x.Index, x.Version, true
}

// readIndex decodes the index file at path; false when there is none or
// it does not decode.
func readIndex(path string) (*indexFile, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	var x indexFile
	if err := gob.NewDecoder(f).Decode(&x); err != nil {
		return nil, false
	}
	return &x, true
}

// saveIndex persists idx for the file described by st, whose bytes are
// the origin's version (written to a temporary file, then renamed).
func saveIndex(path string, st os.FileInfo, idx *tsindex.Index, version string) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	// wall clock: the file's mtime
	err = gob.NewEncoder(f).Encode(indexFile{Size: st.Size(), ModUnix: st.ModTime().UnixNano(), Index: *idx, Version: version, Format: tsindex.Format})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
