//go:build unix

package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A data directory whose lock file another holder has locked (flock(2),
// as another manager's store does) is refused with ErrLocked naming it,
// by our lock, not badger's text; the lock goes with Close, so that the
// directory opens again after it. Badger's own lock (of the directory)
// did not see a holder of the lock file.
func TestOpenBadgerLockFile(t *testing.T) {
	dir := t.TempDir()
	f, err := os.OpenFile(filepath.Join(dir, dirLockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if b, err := OpenBadger(dir, nil); err == nil {
		b.Close()
		t.Fatal("opened a data directory whose lock file another holder has locked")
	} else if !errors.Is(err, ErrLocked) || err.Error() != ErrLocked.Error()+": "+dir {
		t.Fatalf("open with the lock file held: %v; want ErrLocked naming %s", err, dir)
	}
	f.Close() // the other holder goes
	for i := range 2 {
		b, err := OpenBadger(dir, nil)
		if err != nil {
			t.Fatalf("open %d, the lock file free: %v", i+1, err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A lock refused for another reason than a holder (ENOLCK: NFS without
// its lock daemon) is not reported as a directory in use: the error names
// the directory and the errno. It was "data directory in use by another
// process", sending the operator to look for a process there is not.
func TestOpenBadgerLockFails(t *testing.T) {
	defer func(f func(int, int) error) { flock = f }(flock)
	flock = func(int, int) error { return unix.ENOLCK }
	dir := t.TempDir()
	b, err := OpenBadger(dir, nil)
	if err == nil {
		b.Close()
		t.Fatal("opened without its lock")
	}
	if errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "ENOLCK") || !errors.Is(err, unix.ENOLCK) {
		t.Fatalf("open with flock failing ENOLCK: %v; want an error naming %s and ENOLCK, not ErrLocked", err, dir)
	}
	flock = unix.Flock
	b, err = OpenBadger(dir, nil) // nothing was left locked
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
}
