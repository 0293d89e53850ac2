package deliver

import (
	"sync"
	"testing"
	"time"
)

// stallingSource is a memSource whose first read at or past byte at
// takes stall (a slow disk, or a reader not scheduled on a loaded
// machine).
type stallingSource struct {
	*memSource
	at    int64
	stall time.Duration
	once  sync.Once
}

func (s *stallingSource) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > s.at {
		s.once.Do(func() { time.Sleep(s.stall) })
	}
	return s.memSource.ReadAt(p, off)
}

// TestESTracksInOrderAfterAReaderStall is TestESTracksOnOneTimeline with
// the play's reader stalled 700 ms once, about 1 s into the play (its
// read of the clip's 6 s, read 1 s ahead of a play from 4 s): the tracks
// still leave in the order of their times. The audio sits in the file up
// to ~0.7 s after the video of its time and goes out ahead of its time
// (esPlay.lead), so it was read only ~0.15 s before it was due: the
// pictures read before the stall went on while the audio due before them
// was not read yet, and the latest picture sent before an audio frame was
// 0.34 s later than it.
func TestESTracksInOrderAfterAReaderStall(t *testing.T) {
	clip := loadClip(t)
	testESTracksOnOneTimeline(t, &stallingSource{memSource: newMemSource(clip), at: int64(len(prefix(t, clip, 6))), stall: 700 * time.Millisecond})
}
