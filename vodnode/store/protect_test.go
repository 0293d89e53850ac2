package store

import (
	"context"
	"errors"
	"testing"
)

// A title the manager protects (an operator's pin) is never evicted to
// make room for a fill; without the protection it is the LRU victim.
func TestProtectedTitleNotEvicted(t *testing.T) {
	data := sample(t)
	o := &origin{titles: map[string][]byte{"a": data, "b": data, "c": data}}
	s, err := Open(Config{Dir: t.TempDir(), Origin: startOrigin(t, o), DiskBytes: int64(2*len(data) + 188)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		tt, err := s.Acquire(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		waitComplete(t, tt)
		s.Release(tt)
	}
	s.SetProtected([]string{"a"}) // a is the least recently used
	tt, err := s.Acquire(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	waitComplete(t, tt)
	s.Release(tt)
	held := map[string]bool{}
	for _, st := range s.Titles() {
		held[st.ID] = true
	}
	if !held["a"] || held["b"] || !held["c"] {
		t.Fatalf("held %v: want the protected a kept, b evicted for c", held)
	}
	// With a and c both protected there is no room for b.
	s.SetProtected([]string{"a", "c"})
	if _, err := s.Acquire(ctx, "b"); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("fill with only protected titles to evict: %v, want ErrNoSpace", err)
	}
}

// A failed fill is reported once through TakeFailures.
func TestFailedFillReported(t *testing.T) {
	o := &origin{titles: map[string][]byte{"junk": make([]byte, 188*10)}}
	s, err := Open(Config{Dir: t.TempDir(), Origin: startOrigin(t, o)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Prefetch(context.Background(), "junk"); err != nil {
		t.Fatal(err)
	}
	s.fills.Wait()
	f := s.TakeFailures()
	if len(f) != 1 || f[0].Title != "junk" || !f[0].Prefetch || f[0].Reason == "" {
		t.Fatalf("failures %+v, want one prefetch failure of junk", f)
	}
	if again := s.TakeFailures(); len(again) != 0 {
		t.Fatalf("failure reported twice: %+v", again)
	}
	s.NoteFailure(Failure{Title: "x", Reason: "refused", Prefetch: true})
	if f := s.TakeFailures(); len(f) != 1 || f[0].Title != "x" {
		t.Fatalf("noted failure: %+v", f)
	}
}
