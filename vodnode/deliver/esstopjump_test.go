package deliver

import (
	"math"
	"testing"
	"time"

	"vodcluster/cdp/tsindex"
)

// TestESStopInATimestampJump: a play of a title whose timestamps jump 10 s
// forward (a splice of two encodes) 4.9 s in, with its Range's end in the
// jump's gap (npt=3-8), holds where it stands when it reaches the jump,
// after the last packet before it: its position there, a PLAY on answered
// the RTP timestamp of about that packet, and the play going on at once.
// It held at the stop's time on the next unit's scale, the far side of the
// jump, 10 s behind (npt 8 - 10 = -2: position 0, an rtptime 7 s behind
// the last packet, the next packet 7 s after the PLAY).
func TestESStopInATimestampJump(t *testing.T) {
	e := startEngine(t, false)
	clip := loadClip(t)
	at := len(prefix(t, clip, 5)) // the clock's 5 s
	st, _, cli := playESOverTCP(t, e, newMemSource(shiftTimestampsFrom(t, clip, 10*tsindex.PTSHz, at, false)))
	if _, err := st.Seek(3); err != nil {
		t.Fatal(err)
	}
	st.SetStop(8)
	st.Resume()
	before := readUntilHeld(t, st, cli, 600*time.Millisecond, 15*time.Second)
	if len(before[0]) == 0 {
		t.Fatal("video: nothing before the jump")
	}
	last := before[0][0].ts // the latest picture's PTS (pictures leave in decoding order)
	for _, p := range before[0] {
		if int32(p.ts-last) > 0 {
			last = p.ts
		}
	}
	pos := st.Position()
	info, err := st.Seek(-1)
	if err != nil {
		t.Fatal(err)
	}
	// About where the last picture sent stands: its DTS is up to a few
	// frames before its PTS, the play held at once after it.
	if d := float64(int32(info[0].RTPTime-last)) / 90000; math.Abs(d) > 0.5 {
		t.Errorf("PLAY on answered rtptime %.3f s from the last picture sent, want about it", d)
	}
	if pos < 4 || pos > 8 {
		t.Errorf("held at %.3f s, want where it stands at the jump (4.9 s) or up to the stop", pos)
	}
	st.SetStop(-1)
	resumed := time.Now()
	st.Resume()
	after := readESFrames(t, cli, 100*time.Millisecond, 15*time.Second, func(out *[2][]esPkt, _ bool) bool {
		return len(out[0]) > 0
	})
	if d := after[0][0].at.Sub(resumed); d > 2*time.Second {
		t.Errorf("the next picture came %v after the PLAY, want at once", d)
	}
}
