package store

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// The operator's eviction of a prefetch under way that no viewer reads
// (EvictOrCancel) cancels it: the title leaves Titles at once, its
// transfer stops before the title's end, its bytes are dropped (no
// partial, no file left) and its room freed; the fill is counted with
// cause evicted and not reported as a failure (the manager would retry
// it). Another eviction (Evict: the planner's, the room's) still leaves
// the fill alone.
func TestEvictOrCancelStopsUnreadPrefetch(t *testing.T) {
	data := sample(t)
	o := newCDPOrigin(t, map[string][]byte{"pre": data})
	o.start(2_000_000) // 250 kB/s: still filling when evicted
	s, pre := prefetchUnderway(t, o.client(), data)

	if err := s.Evict("pre"); !errors.Is(err, ErrInUse) {
		t.Fatalf("Evict of a prefetch filling: %v, want ErrInUse (only the operator's eviction cancels it)", err)
	}
	cancelled, done, err := s.EvictOrCancel("pre")
	if err != nil || !cancelled || done == nil {
		t.Fatalf("EvictOrCancel of a prefetch no viewer reads: cancelled %v, done %v, err %v; want cancelled", cancelled, done != nil, err)
	}
	if st, ok := statusOf(s, "pre"); ok {
		t.Fatalf("cancelled prefetch still listed: %+v", st)
	}
	wait(t, done, "the cancelled prefetch's end")
	if v := pre.View(); !errors.Is(v.Err, errCancelled) || v.Complete {
		t.Fatalf("cancelled prefetch ended with %v (complete %v), want errCancelled", v.Err, v.Complete)
	}
	s.fills.Wait()
	if sent := o.sent(); sent >= int64(len(data)) {
		t.Fatalf("origin sent %d bytes of %d: the transfer was not cancelled", sent, len(data))
	}
	if ps := s.Partials(); len(ps) != 0 {
		t.Fatalf("partials %+v, want none kept of an evicted title", ps)
	}
	if used, _, _ := s.Usage(); used != 0 {
		t.Fatalf("disk used %d after the cancelled prefetch, want 0", used)
	}
	for _, ext := range []string{".ts", ".ts.part", ".idx", partialMetaExt} {
		if _, err := os.Stat(s.path("pre", ext)); !os.IsNotExist(err) {
			t.Fatalf("%s of the evicted prefetch: %v, want none", ext, err)
		}
	}
	if fs := s.TakeFailures(); len(fs) != 0 {
		t.Fatalf("failures %+v, want none for a prefetch the operator cancelled", fs)
	}
	if got := s.FillsFailed(); got["cancelled"] != 1 || got["evicted"] != 0 {
		t.Fatalf("fills failed by cause %v, want the operator's cancel counted once as cancelled (not evicted)", got)
	}
}

// A prefetch a viewer reads (it joined the fill), is on its way for
// (Expect) or that is pinned is not cancelled by the operator's eviction:
// ErrInUse, the fill goes on (an eviction never cuts a playing session).
func TestEvictOrCancelLeavesReadPrefetch(t *testing.T) {
	data := sample(t)
	for _, tc := range []struct {
		name string
		need func(t *testing.T, s *Store) func()
	}{
		{"read", func(t *testing.T, s *Store) func() {
			tt, err := s.Acquire(context.Background(), "pre")
			if err != nil {
				t.Fatal(err)
			}
			return func() { s.Release(tt) }
		}},
		{"expected", func(t *testing.T, s *Store) func() {
			if !s.Expect("s1", "pre", time.Now().Add(time.Minute)) {
				t.Fatal("expect refused")
			}
			return func() {}
		}},
		{"pinned", func(t *testing.T, s *Store) func() { s.SetProtected([]string{"pre"}); return func() {} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s := prefetchHanging(t, data)
			defer tc.need(t, s)()
			cancelled, _, err := s.EvictOrCancel("pre")
			if !errors.Is(err, ErrInUse) || cancelled {
				t.Fatalf("EvictOrCancel of a prefetch a viewer needs: cancelled %v, err %v; want ErrInUse", cancelled, err)
			}
			if st, ok := statusOf(s, "pre"); !ok || !st.Filling {
				t.Fatalf("prefetch after the refused eviction: %+v (found %v), want still filling", st, ok)
			}
		})
	}
}

// A prefetch whose fill completed as the operator's eviction cancelled
// it (the last bytes came with the cancel) is evicted once complete
// (dropEvictedCopy), unless a reader came for it since: the operator
// wanted it gone, and Titles no longer listed it.
func TestEvictedPrefetchCompletedIsDropped(t *testing.T) {
	data := sample(t)
	for _, read := range []bool{false, true} {
		o := newCDPOrigin(t, map[string][]byte{"pre": data})
		o.start(0)
		s, err := Open(Config{Dir: t.TempDir(), Origin: o.client()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := fillEnded(t, s, "pre"); err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		pre := s.titles["pre"]
		pre.evicted = true // cancelled as it completed
		if read {
			pre.refs++
		}
		s.mu.Unlock()
		s.dropEvictedCopy(pre)
		_, listed := statusOf(s, "pre")
		_, statErr := os.Stat(s.path("pre", ".ts"))
		if read != listed || read != (statErr == nil) {
			t.Fatalf("read %v: the completed copy the eviction cancelled listed %v, file %v; want them kept only when read", read, listed, statErr)
		}
	}
}
