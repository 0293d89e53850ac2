package store

import (
	"errors"
	"strings"
	"testing"
)

// The behaviour Badger shares with every Store is tested in
// conformance_test.go.

func TestOpenBadgerLockedDir(t *testing.T) {
	dir := t.TempDir()
	b, err := OpenBadger(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b2, err := OpenBadger(dir, nil); err == nil {
		b2.Close()
		t.Fatal("second open of a locked directory succeeded")
	} else if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second open: %v, want ErrLocked naming %s", err, dir)
	}
	if _, err := OpenBadger("", nil); err == nil {
		t.Fatal("empty dir accepted")
	}
}
