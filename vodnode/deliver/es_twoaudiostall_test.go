package deliver

import (
	"testing"
	"time"
)

// TestESPictureWaitsForSetUpAudioOnly: a picture due while the reader is
// stalled waits for the audio due before it of the tracks played alone:
// with the second of two audio tracks set up (the first not, so never
// read), it waits while the second's audio read ends before it, and not
// once it was read past it, whatever the first's; nor for a track whose
// audio read ended long before it (ended, or a gap in it).
func TestESPictureWaitsForSetUpAudioOnly(t *testing.T) {
	p := newESPlayN(3)
	now := time.Now()
	pic := &esUnit{track: 0, due: 100_000}
	if p.awaitsAudioLocked(pic, now) {
		t.Fatal("a picture waits before any audio was read")
	}
	p.audioRead(2, 99_000)
	if !p.awaitsAudioLocked(pic, now) {
		t.Error("a picture does not wait for the set-up track's audio due before it")
	}
	p.audioRead(2, 101_000)
	if p.awaitsAudioLocked(pic, now) {
		t.Error("a picture waits with the set-up track's audio read past it (the other track never read)")
	}
	p.audioRead(1, 100_000-esAudioGap-1)
	if p.awaitsAudioLocked(pic, now) {
		t.Error("a picture waits for a track whose audio ended long before it")
	}
	p.audioRead(1, 99_500)
	if !p.awaitsAudioLocked(pic, now) {
		t.Error("a picture does not wait for the first track's audio due before it, both set up")
	}
}
