package store

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// A fill the file system cannot hold is refused at once (ErrNoSpace,
// which the node answers 453 / 503) however large the quota, rather than
// started to fail writing (no space left on device) once the viewer has
// had a second of it; a fill that evicting a title not in use makes room
// for on the file system evicts it, as one over the quota does; a title
// protected or in use is not room.
func TestFillNeedsRoomOnTheFileSystem(t *testing.T) {
	data := sample(t)
	size := int64(len(data))
	o := &origin{titles: map[string][]byte{"old": data, "new": data, "big": data}}
	s, err := Open(Config{Dir: t.TempDir(), Origin: startOrigin(t, o), DiskBytes: 100 * size})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The file system's free bytes, as statfs(2) would give them.
	var free atomic.Int64
	free.Store(10 * size)
	s.fsAvail = func() (int64, bool) { return free.Load(), true }
	ctx := context.Background()
	if err := fillEnded(t, s, "old"); err != nil {
		t.Fatal(err)
	}

	// Half a title free and old protected: no room, nothing started.
	free.Store(size / 2)
	s.SetProtected([]string{"old"})
	if tt, err := s.Acquire(ctx, "new"); !errors.Is(err, ErrNoSpace) {
		if err == nil {
			s.Release(tt)
		}
		t.Fatalf("fill of %d bytes with %d free on the file system and nothing to evict: %v, want ErrNoSpace", size, size/2, err)
	}
	// In use (a reader holds it): no room either.
	s.SetProtected(nil)
	held, err := s.Acquire(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if tt, err := s.Acquire(ctx, "new"); !errors.Is(err, ErrNoSpace) {
		if err == nil {
			s.Release(tt)
		}
		t.Fatalf("fill with the only evictable title in use: %v, want ErrNoSpace", err)
	}
	s.Release(held)
	if got := s.Fills()["new"]; got != 0 {
		t.Fatalf("%d fills of new started, want none", got)
	}
	if s.DiskFault() {
		t.Fatal("a refused fill left a disk fault")
	}

	// old is not in use any more: evicting it makes the room.
	if err := fillEnded(t, s, "new"); err != nil {
		t.Fatalf("fill with room made by evicting old: %v", err)
	}
	ids := map[string]bool{}
	for _, st := range s.Titles() {
		ids[st.ID] = true
	}
	if ids["old"] || !ids["new"] {
		t.Fatalf("titles %v after the fill: want old evicted for new", ids)
	}

	// The quota's room does not count when the file system has none,
	// whatever the quota (0 = unlimited).
	s.cfg.DiskBytes = 0
	s.SetProtected([]string{"new"})
	free.Store(size - 1)
	if _, err := s.Acquire(ctx, "big"); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("fill one byte larger than the file system's free space, no quota: %v, want ErrNoSpace", err)
	}
}
