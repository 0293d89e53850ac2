package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"vodcluster/cdp/tsindex"
)

// pageSize is the unit in which a file's written bytes reach the disk; a
// machine that loses power may keep the file's size and lose whole pages
// of it from any one on (they read back as zeros).
const pageSize = 4096

// A partial whose tail pages a power loss never wrote (zeros from a page
// boundary on, the file's size kept): 188-byte packets do not line up with
// pages, so the last packet whose sync byte survived may have lost its
// tail. The resume cuts before that packet too, fetches the rest again,
// and the title ends up byte for byte the origin's.
func TestPartialAfterAPowerLossResumedWhole(t *testing.T) {
	data := sample(t)
	size := int64(len(data))
	o, cfg, partSize := stopMidFill(t, data, 600<<10)
	part := filepath.Join(cfg.Dir, "t1.ts.part")
	// The pages from the first at or after 300 KiB that does not begin a
	// packet on lost: zeros up to the file's end.
	lost := int64(300<<10) / pageSize * pageSize
	for lost%tsindex.PacketSize == 0 {
		lost += pageSize
	}
	f, err := os.OpenFile(part, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, partSize-lost), lost); err != nil {
		t.Fatal(err)
	}
	f.Close()
	firstBad := (lost + tsindex.PacketSize - 1) / tsindex.PacketSize * tsindex.PacketSize

	s2, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	before := o.sent()
	tt, err := s2.Acquire(context.Background(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Release(tt)
	waitComplete(t, tt)
	checkWhole(t, s2, tt, data)
	if got, want := o.sent()-before, size-(firstBad-tsindex.PacketSize); got != want {
		t.Errorf("the origin sent %d bytes for the resumed fill, want %d (from the packet before the first bad one)", got, want)
	}
}
