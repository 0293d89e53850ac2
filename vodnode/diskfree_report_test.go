//go:build linux

package vodnode

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// The free disk a node reports is measured on the file system holding
// its titles (data_dir/titles, which may be a mount of its own), the one
// its store checks a fill's room against: a 1 MB tmpfs mounted there,
// with no disk_bytes, is reported as at most 1 MB free. The node measured
// data_dir's file system instead, and reported that disk's free space.
// It mounts a real tmpfs: skipped where that is not allowed (not root).
func TestLoadReportMeasuresTheTitlesFileSystem(t *testing.T) {
	base := t.TempDir()
	titles := filepath.Join(base, "titles")
	if err := os.MkdirAll(titles, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", titles, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
		t.Skipf("cannot mount a 1 MB tmpfs here (root with CAP_SYS_ADMIN needed): %v", err)
	}
	t.Cleanup(func() { unix.Unmount(titles, unix.MNT_DETACH) }) // after the node closes
	n := startNode(t, "", func(n *Node) { n.DataDir = base })
	r := (&managerLink{n: n}).loadReport()
	if free := r.GetDiskFreeBytes(); free < 0 || free > 1<<20 {
		t.Fatalf("reported free disk %d bytes with the titles on a 1 MB tmpfs, want 0..%d", free, 1<<20)
	}
}

// A node with no disk_bytes whose file system cannot be measured (statfs
// fails: its directory gone) reports its free disk unknown (-1), which
// the manager counts as its budget alone; it reported 0, a full disk, and
// the manager sent it no fill.
func TestLoadReportFreeDiskUnknown(t *testing.T) {
	n := startNode(t, "")
	if r := (&managerLink{n: n}).loadReport(); r.GetDiskFreeBytes() <= 0 {
		t.Fatalf("reported free disk %d with the file system measurable, want > 0", r.GetDiskFreeBytes())
	}
	if err := os.RemoveAll(n.DataDir); err != nil {
		t.Fatal(err)
	}
	if r := (&managerLink{n: n}).loadReport(); r.GetDiskFreeBytes() != -1 {
		t.Fatalf("reported free disk %d with no quota and statfs failing, want -1 (unknown)", r.GetDiskFreeBytes())
	}
}
