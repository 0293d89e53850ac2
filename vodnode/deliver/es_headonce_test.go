package deliver

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"vodcluster/cdp/tsindex"
)

// readCountSource is a complete in-memory title that counts the reads
// covering each of the offsets in watch.
type readCountSource struct {
	*memSource
	mu    sync.Mutex
	watch []int64
	reads map[int64]int
}

func (s *readCountSource) ReadAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	for _, w := range s.watch {
		if off <= w && w < off+int64(len(p)) {
			s.reads[w]++
		}
	}
	s.mu.Unlock()
	return s.memSource.ReadAt(p, off)
}

// count returns how many reads covered offset w.
func (s *readCountSource) count(w int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads[w]
}

// TestESHeadReadOnce: a play from a point after which a track has no
// packet (a title whose audio ends at 6 s, played from 12 s) reads the
// head of the play, where the audio's first packet is looked for, once
// before it starts: each byte of the title 1 and 2 s into the play is read
// twice in all, by that look and by the play. (The look read the head,
// up to 1 MB, a second time to tell which tracks were missing: three
// reads.)
func TestESHeadReadOnce(t *testing.T) {
	data := shortAudioTitle(t)
	x, err := tsindex.BuildFrom(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	offsetAt := func(s float64) int64 {
		for _, p := range x.PCRs {
			if float64(p.PCR-x.PCRs[0].PCR)/tsindex.PCRHz >= s {
				return p.Offset + 3*TSPacketSize // inside, not at a read's edge
			}
		}
		t.Fatalf("no clock at %v s", s)
		return 0
	}
	src := &readCountSource{memSource: newMemSource(data), watch: []int64{offsetAt(13), offsetAt(14)}, reads: map[int64]int{}}
	e := startEngine(t, false)
	st, _, cli := playESOverTCP(t, e, src)
	if _, err := st.Seek(12); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	got := readES(t, cli, 2500*time.Millisecond)
	if len(got[0]) < 10 {
		t.Fatalf("%d video packets in 2.5 s of a play from 12 s, want pictures", len(got[0]))
	}
	for i, w := range src.watch {
		if n := src.count(w); n != 2 {
			t.Errorf("the byte %d s into the play (offset %d) read %d times, want 2 (the head's look, the play)", i+1, w, n)
		}
	}
}
