package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// statusOf returns the Status of id in s.Titles(), ok false when absent.
func statusOf(s *Store, id string) (Status, bool) {
	for _, st := range s.Titles() {
		if st.ID == id {
			return st, true
		}
	}
	return Status{}, false
}

// prefetchHanging opens a store whose disk holds one title (data) and
// prefetches title pre into it from an origin that starts the transfer
// and sends nothing (pre's room taken, its fill in progress); the origin
// also serves dem. The store is closed when the test ends.
func prefetchHanging(t *testing.T, data []byte) (*hangingCDP, *Store) {
	t.Helper()
	o, client := startHangingCDP(t, map[string][]byte{"pre": data, "dem": data}, 4, "pre")
	s, err := Open(Config{Dir: t.TempDir(), Origin: client, DiskBytes: int64(len(data)) + 188})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Prefetch(context.Background(), "pre"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(o.of("pre")) == 1 }, "the prefetch's transfer")
	return o, s
}

// A prefetch no viewer needs yields its room to a fill on demand: with
// the disk's room taken by a prefetch in progress (its transfer started
// at the origin, no byte yet), a viewer's fill of another title is
// accepted, stops the prefetch when the origin answers it, and completes;
// the prefetch is reported failed with cause preempted, its transfer
// given up at the origin.
func TestDemandFillPreemptsPrefetch(t *testing.T) {
	data := sample(t)
	o, s := prefetchHanging(t, data)
	ctx := context.Background()
	pre := o.of("pre")[0]
	wait(t, pre.started, "started message of the prefetch's transfer")
	if st, ok := statusOf(s, "pre"); !ok || !st.Filling || !st.Preemptible {
		t.Fatalf("prefetch in progress: %+v (found %v), want filling and preemptible", st, ok)
	}
	// Another prefetch does not take its room.
	if err := s.Prefetch(ctx, "dem"); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("prefetch into a disk taken by another prefetch: %v, want ErrNoSpace", err)
	}

	tt, err := s.Acquire(ctx, "dem")
	if err != nil {
		t.Fatalf("fill on demand with the disk taken by a prefetch: %v", err)
	}
	defer s.Release(tt)
	waitComplete(t, tt)
	wait(t, pre.gaveUp, "the preempted prefetch's transfer given up at the origin")
	s.fills.Wait()
	if _, ok := statusOf(s, "pre"); ok {
		t.Fatal("the preempted prefetch is still on the node")
	}
	if st, ok := statusOf(s, "dem"); !ok || st.Filling || st.Stored != int64(len(data)) {
		t.Fatalf("title filled on demand: %+v (found %v), want stored whole", st, ok)
	}
	fs := s.TakeFailures()
	if len(fs) != 1 || fs[0].Title != "pre" || !fs[0].Prefetch || !strings.Contains(fs[0].Reason, "preempted") {
		t.Fatalf("failures %+v, want the prefetch of pre, preempted", fs)
	}
	if got := s.FillsFailed()["preempted"]; got != 1 {
		t.Fatalf("fills failed with cause preempted: %d, want 1 (%v)", got, s.FillsFailed())
	}
	if used, _, _ := s.Usage(); used != int64(len(data)) {
		t.Fatalf("disk used %d, want the title filled on demand alone, %d", used, len(data))
	}
}

// A prefetch that a viewer needs keeps its room: one a viewer plays (it
// joined the fill), one pinned (SetProtected) and one a viewer is on its
// way for (Expect) are not preemptible, and a fill on demand that only
// their room could take is refused ErrNoSpace.
func TestPrefetchNeededByAViewerKeepsItsRoom(t *testing.T) {
	data := sample(t)
	for _, tc := range []struct {
		name string
		need func(t *testing.T, s *Store) func()
	}{
		{"played", func(t *testing.T, s *Store) func() {
			tt, err := s.Acquire(context.Background(), "pre")
			if err != nil {
				t.Fatal(err)
			}
			return func() { s.Release(tt) }
		}},
		{"pinned", func(t *testing.T, s *Store) func() { s.SetProtected([]string{"pre"}); return func() {} }},
		{"expected", func(t *testing.T, s *Store) func() {
			if !s.Expect("s1", "pre", time.Now().Add(time.Minute)) {
				t.Fatal("expect refused")
			}
			return func() {}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s := prefetchHanging(t, data)
			done := tc.need(t, s)
			defer done()
			if st, ok := statusOf(s, "pre"); !ok || !st.Filling || st.Preemptible {
				t.Fatalf("prefetch a viewer needs: %+v (found %v), want filling, not preemptible", st, ok)
			}
			if _, err := s.Acquire(context.Background(), "dem"); !errors.Is(err, ErrNoSpace) {
				t.Fatalf("fill on demand with the disk taken by a needed prefetch: %v, want ErrNoSpace", err)
			}
			if st, ok := statusOf(s, "pre"); !ok || !st.Filling {
				t.Fatalf("needed prefetch after the refused fill: %+v (found %v), want still filling", st, ok)
			}
		})
	}
}

// prefetchUnderway opens a store whose disk holds 1.75 times data,
// prefetches title pre into it from origin and returns once the prefetch
// has stored 100 kB (closed when the test ends).
func prefetchUnderway(t *testing.T, origin pb.OriginClient, data []byte) (*Store, *Title) {
	t.Helper()
	s, err := Open(quickRetry(Config{Dir: t.TempDir(), Origin: origin, DiskBytes: int64(len(data)) * 7 / 4}, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Prefetch(context.Background(), "pre"); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	pre := s.titles["pre"]
	s.mu.Unlock()
	waitView(t, pre, 10*time.Second, "the prefetch's first 100 kB", func(v *View) bool { return v.Index.Size >= 100_000 })
	return s, pre
}

// A preempted prefetch keeps the bytes it had as a partial when the disk
// has room for them beside the fill on demand, and a later fill of its
// title resumes from them.
func TestPreemptedPrefetchKeepsItsPartial(t *testing.T) {
	data := sample(t)
	o := newCDPOrigin(t, map[string][]byte{"pre": data, "dem": data})
	o.start(2_000_000) // 250 kB/s: the prefetch is still filling when the viewer comes
	s, pre := prefetchUnderway(t, o.client(), data)
	ctx := context.Background()

	tt, err := s.Acquire(ctx, "dem")
	if err != nil {
		t.Fatalf("fill on demand with the disk taken by a prefetch: %v", err)
	}
	if v := waitView(t, pre, 10*time.Second, "the prefetch's end", func(v *View) bool { return v.Err != nil || v.Complete }); !errors.Is(v.Err, errPreempted) {
		t.Fatalf("prefetch ended with %v (complete %v), want preempted", v.Err, v.Complete)
	}
	waitComplete(t, tt)
	s.Release(tt)
	s.fills.Wait()
	ps := s.Partials()
	if len(ps) != 1 || ps[0].ID != "pre" || ps[0].Stored < 100_000 {
		t.Fatalf("partials %+v, want the preempted prefetch's, 100 kB or more", ps)
	}
	kept := ps[0].Stored
	sentBefore := o.sent()
	if err := s.Evict("dem"); err != nil {
		t.Fatal(err)
	}
	if err := fillEnded(t, s, "pre"); err != nil {
		t.Fatalf("fill of the preempted title: %v", err)
	}
	if got, want := o.sent()-sentBefore, int64(len(data))-kept; got != want {
		t.Fatalf("origin sent %d bytes for the resumed fill, want %d (the partial's %d kept)", got, want, kept)
	}
}

// A fill on demand whose viewers all left before the origin's first byte
// (it goes on, not abandoned yet) stops no prefetch for its room: no
// viewer waits for it. It fails for want of room; the prefetch goes on.
func TestFillWithoutViewerStopsNoPrefetch(t *testing.T) {
	data := sample(t)
	// pre's transfers hang (its room taken, no byte); dem's first
	// one hangs until the fill gives it up (StallAfter) and asks again.
	o, client := startHangingCDP(t, map[string][]byte{"pre": data, "dem": data}, 4, "pre", "pre", "pre", "pre", "pre", "pre", "pre", "pre", "dem")
	s, err := Open(Config{Dir: t.TempDir(), Origin: client, DiskBytes: int64(len(data)) + 188,
		StallAfter: 300 * time.Millisecond, Retry: 20 * time.Millisecond, AbandonAfter: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.Prefetch(ctx, "pre"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(o.of("pre")) == 1 }, "the prefetch's transfer")
	tt, err := s.Acquire(ctx, "dem")
	if err != nil {
		t.Fatalf("fill on demand with the disk taken by a prefetch: %v", err)
	}
	waitFor(t, func() bool { return len(o.of("dem")) == 1 }, "the fill's first transfer")
	wait(t, o.of("dem")[0].started, "started message of the fill's first transfer")
	s.Release(tt) // its viewer leaves before the first byte
	if err := waitEnded(t, tt); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("fill without a viewer: %v, want ErrNoSpace", err)
	}
	if st, ok := statusOf(s, "pre"); !ok || !st.Filling || !st.Preemptible {
		t.Fatalf("prefetch after the fill without a viewer: %+v (found %v), want still filling", st, ok)
	}
	if got := s.FillsFailed()["preempted"]; got != 0 {
		t.Fatalf("prefetches preempted: %d, want none", got)
	}
}
