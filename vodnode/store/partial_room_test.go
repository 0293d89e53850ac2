package store

import (
	"sync/atomic"
	"testing"
	"time"
)

// The node reports its partials to the manager as free disk, file system
// included, so a fill the file system lacks room for removes partials
// (oldest first, as many as the shortfall needs) even when the quota has
// room: a disk_bytes above the disk's size, or other files on the disk.
// Without that the manager, counting them free, orders a fill the disk
// cannot take and the fill fails writing (no space left on device).
func TestPartialsMakeRoomOnTheFileSystem(t *testing.T) {
	data := sample(t)
	size := int64(len(data))
	const cut = 188 * 2000
	o := newFlakyOrigin(map[string][]byte{"p1": data, "p2": data, "p3": data, "new": data, "next": data}, cut)
	clk := newTestClock()
	s, err := Open(quickRetry(Config{Dir: t.TempDir(), Origin: startOrigin(t, o), Now: clk.now, DiskBytes: 100 * size}, 200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The file system's free bytes, as statfs(2) would give them.
	var free atomic.Int64
	free.Store(10 * size)
	s.fsAvail = func() (int64, bool) { return free.Load(), true }
	o.down.Store(true)
	for _, id := range []string{"p1", "p2", "p3"} {
		if fillEnded(t, s, id) == nil {
			t.Fatalf("fill of %s from a down origin completed", id)
		}
		clk.add(time.Minute)
	}
	o.down.Store(false)

	// Room on the file system: no partial goes.
	if err := fillEnded(t, s, "new"); err != nil {
		t.Fatal(err)
	}
	if ps := s.Partials(); len(ps) != 3 {
		t.Fatalf("partials after a fill the file system had room for: %+v, want p1, p2, p3", ps)
	}

	// Room for the next title but for one and a half partials: the two
	// oldest go, the newest stays.
	free.Store(size - cut - cut/2)
	if err := fillEnded(t, s, "next"); err != nil {
		t.Fatal(err)
	}
	if ps := s.Partials(); len(ps) != 1 || ps[0].ID != "p3" {
		t.Errorf("partials after a fill the file system lacked room for: %+v, want p3 only", ps)
	}
	if used, _, _ := s.Usage(); used != 2*size+cut {
		t.Errorf("used %d bytes, want two titles and one partial: %d", used, 2*size+cut)
	}
}
