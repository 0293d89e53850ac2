//go:build unix

package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A second Store on the same directory fails with ErrLocked and touches
// nothing there (a fill's .part file stays); after Close it opens.
func TestDirLocked(t *testing.T) {
	dir := t.TempDir()
	s1, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(dir, "filling.ts.part")
	if err := os.WriteFile(part, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(Config{Dir: dir})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) {
		if s2 != nil {
			s2.Close()
		}
		t.Fatalf("second Open: %v, want ErrLocked naming %s", err, dir)
	}
	if _, err := os.Stat(part); err != nil {
		t.Errorf("the second Open touched the first one's files: %v", err)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	s3, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatalf("Open after the holder closed: %v", err)
	}
	s3.Close()
}
