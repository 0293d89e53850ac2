package deliver

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"vodcluster/cdp/tsindex"
)

// TestESStopInATimestampJump: a play of a title whose timestamps jump 10 s
// forward (a splice of two encodes) 4.9 s in, with its Range's end past
// the jump (npt=3-8; npt runs on across the jump, which the index
// absorbs), holds at its end: its position there, a PLAY on answered the
// RTP timestamp of about the last packet, and the play going on at once.
// (With npt taken on the stream's own PTS, the end fell in the jump's gap:
// the play held at the stop's time on the far side of the jump, 10 s
// behind, position 0, an rtptime 7 s behind the last packet, the next
// packet 7 s after the PLAY; then it held at the jump.)
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
	if pos < 7.5 || pos > 8.05 {
		t.Errorf("held at %.3f s, want at the stop (8 s)", pos)
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

// pesPTSBefore returns, per track (0 video: stream id 0xe0-0xef, 1 audio:
// 0xc0-0xdf), the PTS of each PES that starts before byte end of data.
func pesPTSBefore(t *testing.T, data []byte, end int) (out [2][]int64) {
	t.Helper()
	for off := 0; off+TSPacketSize <= end; off += TSPacketSize {
		b := data[off : off+TSPacketSize]
		if b[0] != 0x47 {
			t.Fatalf("no sync byte at %d", off)
		}
		afc, p := b[3]>>4&3, 4
		if afc&2 != 0 {
			p += 1 + int(b[4])
		}
		if b[1]&0x40 == 0 || afc&1 == 0 || p+14 > TSPacketSize || b[p] != 0 || b[p+1] != 0 || b[p+2] != 1 || b[p+3] < 0xc0 || b[p+7]>>6&2 == 0 {
			continue
		}
		track := 1
		if b[p+3] >= 0xe0 {
			track = 0
		}
		q := b[p+9:]
		out[track] = append(out[track], int64(q[0]>>1&7)<<30|int64(q[1])<<22|int64(q[2]>>1)<<15|int64(q[3])<<7|int64(q[4]>>1))
	}
	return out
}

// TestESStopInATimestampJumpSendsWhatPrecedesIt: a play of a title whose
// timestamps jump 10 s forward 4.9 s in (a splice), its Range's end past
// the jump (npt=3-8, npt running on across it), sends every access unit
// from before the jump before it holds: the last picture and the last
// audio frame before the jump too, though the audio from past the jump,
// placed on the play's timeline with the pictures before it, comes up
// before them in the send queue; and the pictures past the jump up to the
// stop, none past it.
func TestESStopInATimestampJumpSendsWhatPrecedesIt(t *testing.T) {
	e := startEngine(t, false)
	clip := loadClip(t)
	at := len(prefix(t, clip, 5)) // the clock's 5 s
	pre := pesPTSBefore(t, clip, at)
	st, tr, cli := playESOverTCP(t, e, newMemSource(shiftTimestampsFrom(t, clip, 10*tsindex.PTSHz, at, false)))
	if _, err := st.Seek(3); err != nil {
		t.Fatal(err)
	}
	st.SetStop(8)
	st.Resume()
	got := readUntilHeld(t, st, cli, 600*time.Millisecond, 15*time.Second)
	rate := int64(tr.Audio.ClockRate())
	for i, name := range []string{"video", "audio"} {
		last := pre[i][0]
		for _, v := range pre[i] {
			last = max(last, v)
		}
		want := uint32(last)
		if i == 1 {
			want = uint32(last * rate / tsindex.PTSHz)
		}
		seen, past := false, false
		for _, p := range got[i] {
			seen = seen || p.ts == want
			// The pictures past the jump go on from the last before
			// it on the timeline (npt 4.9 s), up to the stop at 8 s
			// (a picture's PTS up to a few frames past its DTS, when
			// it is sent).
			past = past || int32(p.ts-want) > 0
			if i == 0 && int32(p.ts-want) > int32(3.5*tsindex.PTSHz) {
				t.Fatalf("video: timestamp %d, %.3f s past the last picture before the jump (%d, npt 4.9 s), sent before the hold at npt 8", p.ts, float64(int32(p.ts-want))/tsindex.PTSHz, want)
			}
		}
		if i == 0 && !past {
			t.Errorf("video: no picture past the jump sent before the hold at npt 8")
		}
		if !seen {
			t.Errorf("%s: the last access unit before the jump (timestamp %d) not sent before the hold; %d packets sent", name, want, len(got[i]))
		}
	}
}

// TestESStopAcrossTheTimestampWrap: a play of a title with B-pictures
// whose timestamps wrap at 2^33 seconds in (13 s), from 11 s with its
// Range's end at 14 s, holds there: the index unwraps each picture's PTS
// by its DTS, so a B-picture decoded after the wrap and presented before
// it is no jump, and the stop is where the play's clock reaches it. (The
// index took it for a jump of -2^33 ticks, placed the stop past anything
// the play would reach, and the play ran to the end of the title.)
// Encoded by ffmpeg.
func TestESStopAcrossTheTimestampWrap(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	out := filepath.Join(t.TempDir(), "wrap.ts")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if b, err := exec.CommandContext(ctx, "ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25",
		"-f", "lavfi", "-i", "sine", "-t", "20", "-c:v", "libx264", "-bf", "3", "-g", "50", "-c:a", "aac",
		"-output_ts_offset", "95430", "-f", "mpegts", out).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	e := startEngine(t, false)
	st, _, cli := playESOverTCP(t, e, newMemSource(data))
	if _, err := st.Seek(11); err != nil {
		t.Fatal(err)
	}
	st.SetStop(14)
	st.Resume()
	readUntilHeld(t, st, cli, 600*time.Millisecond, 15*time.Second)
	if pos := st.Position(); pos < 13.5 || pos > 14.05 {
		t.Fatalf("held at %.3f s, want at the stop (14 s)", pos)
	}
}
