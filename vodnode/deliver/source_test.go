package deliver

import (
	"bytes"
	"os"
	"sync"
	"testing"
	"time"

	"vodcluster/cdp/tsindex"
)

// memSource is an in-memory title that can be revealed progressively, like
// a fill in progress.
type memSource struct {
	data []byte

	mu       sync.Mutex
	b        *tsindex.Builder
	shown    int
	complete bool
	err      error
	idx      tsindex.Index
	waiters  []func()
	afters   []int64
}

func loadClip(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("../../cdp/samples/clip-a.ts")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newMemSource returns a complete source of data.
func newMemSource(data []byte) *memSource {
	s := &memSource{data: data, b: tsindex.NewBuilder()}
	s.reveal(len(data))
	s.complete = true
	return s
}

// newFillingSource returns a source with nothing readable yet.
func newFillingSource(data []byte) *memSource {
	return &memSource{data: data, b: tsindex.NewBuilder(), idx: tsindex.Index{FirstPTS: -1}}
}

// reveal makes the first n bytes readable (n only grows) and wakes waiters.
func (s *memSource) reveal(n int) {
	s.mu.Lock()
	if n > s.shown {
		s.b.Write(s.data[s.shown:n])
		s.shown = n
	}
	s.idx = *s.b.Index()
	if n >= len(s.data) {
		s.complete = true
	}
	var due []func()
	keepF, keepA := s.waiters[:0], s.afters[:0]
	for i, f := range s.waiters {
		if s.idx.Size > s.afters[i] || s.complete {
			due = append(due, f)
		} else {
			keepF, keepA = append(keepF, f), append(keepA, s.afters[i])
		}
	}
	s.waiters, s.afters = keepF, keepA
	s.mu.Unlock()
	for _, f := range due {
		f()
	}
}

func (s *memSource) State() (*tsindex.Index, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	idx := s.idx
	return &idx, s.complete, s.err
}

func (s *memSource) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(s.data).ReadAt(p, off)
}

func (s *memSource) Notify(after int64, fn func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idx.Size > after || s.complete || s.err != nil {
		return false
	}
	s.waiters = append(s.waiters, fn)
	s.afters = append(s.afters, after)
	return true
}

// waitsPast reports whether a Notify waits for bytes past at least off.
func (s *memSource) waitsPast(off int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.afters {
		if a >= off {
			return true
		}
	}
	return false
}

// awaitWaitPast waits, at most 10 s, until a Notify waits for bytes past
// at least off: the stream has taken everything revealed before it.
func (s *memSource) awaitWaitPast(t testing.TB, off int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !s.waitsPast(off) {
		if time.Now().After(deadline) {
			t.Fatal("the stream did not wait for the fill past the prefix revealed")
		}
		time.Sleep(time.Millisecond)
	}
}

// seconds returns the byte length of the first d seconds of data
// (whole RTP payloads).
func prefix(t testing.TB, data []byte, d float64) []byte {
	t.Helper()
	x, err := tsindex.BuildFrom(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range x.PCRs {
		if float64(p.PCR-x.PCRs[0].PCR)/tsindex.PCRHz >= d {
			return data[:p.Offset]
		}
	}
	return data
}

// fail makes the source's fill fail with err and wakes its waiters, as
// Source.Notify does for a fill that failed.
func (s *memSource) fail(err error) {
	s.mu.Lock()
	s.err = err
	due := s.waiters
	s.waiters, s.afters = nil, nil
	s.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// refilled clears the failed fill's error, as a new fill of the title
// from the bytes on disk does: what an OnFillFailed that answers yes has
// had done before it answers.
func (s *memSource) refilled() {
	s.mu.Lock()
	s.err = nil
	s.mu.Unlock()
}
