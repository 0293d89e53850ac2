package deliver

import (
	"fmt"
	"strings"
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

// withoutAudioFrom returns data with the TS packets of its audio PID (the
// PID of its first audio PES) from byte from on made null packets (PID
// 0x1fff): a title whose audio ends there, its video going on.
func withoutAudioFrom(data []byte, from int) []byte {
	out := append([]byte(nil), data...)
	apid := -1
	for off := 0; off+TSPacketSize <= len(out); off += TSPacketSize {
		b := out[off : off+TSPacketSize]
		pid := int(b[1]&0x1f)<<8 | int(b[2])
		afc, p := b[3]>>4&3, 4
		if afc&2 != 0 {
			p += 1 + int(b[4])
		}
		if apid < 0 && b[1]&0x40 != 0 && afc&1 != 0 && p+4 < TSPacketSize && b[p] == 0 && b[p+1] == 0 && b[p+2] == 1 && b[p+3] >= 0xc0 && b[p+3] < 0xe0 {
			apid = pid
		}
		if off >= from && pid == apid {
			b[1], b[2] = 0x1f, 0xff
		}
	}
	return out
}

// TestESReaderStallAfterTheAudioEnded: a play of a title whose audio ends
// (its last frame read seconds before), its video going on, sends its
// pictures on time through a 700 ms stall of its reader: no audio is
// coming for them to wait for. They waited for it up to the stall's end,
// each picture 0.7 s late, in every run. Lateness is measured against the
// wall clock, which a loaded machine moves too: the play is tried up to
// three times, and passes when one run sends every picture on time
// (TestPictureAwaitsOnlyAudioNearBefore checks the rule without a clock).
func TestESReaderStallAfterTheAudioEnded(t *testing.T) {
	clip := loadClip(t)
	data := withoutAudioFrom(clip, len(prefix(t, clip, 5)))
	var runs []string
	for range 3 {
		worst, at := esStallLateness(t, data)
		if worst <= 400*time.Millisecond {
			return
		}
		runs = append(runs, fmt.Sprintf("a picture (RTP time %d) %v late", at, worst))
	}
	t.Errorf("pictures late through the reader's stall in every run, want on time: %s", strings.Join(runs, "; "))
}

// esStallLateness plays data over TCP from 4 s, its reader stalled 700 ms
// at 7.5 s, for 4.5 s, and returns how late its latest picture came
// against the first one's arrival, by its RTP time (its PTS; it leaves at
// its DTS, up to ~0.2 s before), and that picture's RTP time.
func esStallLateness(t *testing.T, data []byte) (time.Duration, uint32) {
	t.Helper()
	e := startEngine(t, false)
	st, _, cli := playESOverTCP(t, e, &stallingSource{memSource: newMemSource(data), at: int64(len(prefix(t, data, 7.5))), stall: 700 * time.Millisecond})
	if _, err := st.Seek(4); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	got := readES(t, cli, 4500*time.Millisecond)
	v := got[0]
	if len(v) == 0 || len(got[1]) == 0 {
		t.Fatalf("%d video and %d audio packets, want both", len(v), len(got[1]))
	}
	var worst time.Duration
	var at uint32
	for _, p := range v {
		want := v[0].at.Add(time.Duration(int32(p.ts-v[0].ts)) * time.Second / 90000)
		if d := p.at.Sub(want); d > worst {
			worst, at = d, p.ts
		}
	}
	return worst, at
}

// TestPictureAwaitsOnlyAudioNearBefore: while the play's reader is behind
// its pace, a picture waits for the audio due before it only when the
// audio read ends at most esAudioGap before it (the reader is stalled in
// the middle of the audio); audio read up to further back has ended, or
// has a gap, and holds no picture. Audio, a reader on time, ended or
// waiting for the fill hold nothing either.
func TestPictureAwaitsOnlyAudioNearBefore(t *testing.T) {
	p := newESPlay()
	p.lead = 9000 // 0.1 s
	t0 := time.Now()
	p.readerOnTime = t0
	behind := t0.Add(time.Second)
	const audioEnd = 10 * 90000
	p.audioSet[1], p.audioEnd[1] = true, audioEnd
	picture := func(due int64) *esUnit { return &esUnit{track: 0, due: due} }
	for _, c := range []struct {
		what string
		u    *esUnit
		at   time.Time
		want bool
	}{
		{"a picture 0.5 s past the audio read, the reader behind", picture(audioEnd - p.lead + 45000), behind, true},
		{"a picture just esAudioGap past it", picture(audioEnd - p.lead + esAudioGap), behind, true},
		{"a picture 2 s past it (the audio ended)", picture(audioEnd - p.lead + 2*90000), behind, false},
		{"a picture before the audio read ends", picture(audioEnd - p.lead - 1), behind, false},
		{"a picture 0.5 s past it, the reader on time", picture(audioEnd - p.lead + 45000), t0, false},
		{"an audio frame", &esUnit{track: 1, due: audioEnd + 45000}, behind, false},
	} {
		if got := p.awaitsAudioLocked(c.u, c.at); got != c.want {
			t.Errorf("%s: waits %v, want %v", c.what, got, c.want)
		}
	}
	p.readerFill = true
	if p.awaitsAudioLocked(picture(audioEnd-p.lead+45000), behind) {
		t.Error("a picture waits for audio while the reader waits for the fill")
	}
	p.readerFill, p.ended = false, true
	if p.awaitsAudioLocked(picture(audioEnd-p.lead+45000), behind) {
		t.Error("a picture waits for audio after the demultiplexer ended")
	}
	// With no audio read at all (a title without audio, or not set up),
	// nothing is awaited.
	q := newESPlay()
	q.readerOnTime = t0
	if q.awaitsAudioLocked(picture(45000), behind) {
		t.Error("a picture waits for audio none of which was read")
	}
}
