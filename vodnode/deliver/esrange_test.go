package deliver

import (
	"math"
	"net"
	"testing"
	"time"

	"github.com/pion/rtp"
)

// TestESRangeEndResumesExactly: a play with a stop (a PLAY Range's end,
// npt=4-5.5) sends every packet due before 5.5 s, then nothing, its
// position 5.5 s; a PLAY without Range (Seek(-1), SetStop(-1), Resume)
// goes on from the next packet of each track, as after a PAUSE: no
// picture or audio frame skipped, none sent twice, the sequence numbers
// and timestamps going on. (The play restarted at the first keyframe
// after what was read, skipping up to a GOP and its audio: 0.8 s here.)
func TestESRangeEndResumesExactly(t *testing.T) {
	e := startEngine(t, false)
	src := newMemSource(loadClip(t))
	first := src.idx.FirstPTS
	st, tr, cli := playESOverTCP(t, e, src)
	rate := float64(tr.Audio.ClockRate())
	const stop = 5.5
	if _, err := st.Seek(4); err != nil {
		t.Fatal(err)
	}
	st.SetStop(stop)
	st.Resume()
	// 1.5 s to play from the keyframe at 4 s, then nothing: read until
	// the play holds at the stop and nothing came for a second after
	// (what came is checked below: none past the stop).
	before := readUntilHeld(t, st, cli, time.Second, 15*time.Second)
	if pos := st.Position(); math.Abs(pos-stop) > 0.01 {
		t.Errorf("held at %.3f s, want the Range's end, %g", pos, stop)
	}
	npt := func(i int, ts uint32) float64 {
		if i == 1 {
			return float64(ts)/rate - float64(first)/90000
		}
		return float64(int64(ts)-first) / 90000
	}
	for i, name := range []string{"video", "audio"} {
		if len(before[i]) == 0 {
			t.Fatalf("%s: nothing before the Range's end", name)
		}
		hi := 0.0
		for _, p := range before[i] {
			hi = max(hi, npt(i, p.ts))
		}
		// A picture leaves at its DTS, up to a few frames before its PTS.
		if hi < stop-0.3 || hi > stop+0.25 {
			t.Errorf("%s: the last sent is at %.3f s, want about the Range's end, %g", name, hi, stop)
		}
	}
	info, err := st.Seek(-1)
	if err != nil {
		t.Fatal(err)
	}
	st.SetStop(-1)
	st.Resume()
	// 1.5 s of the play, and more until both tracks came (a loaded
	// machine may be slow to go on).
	resumed := time.Now()
	after := readESFrames(t, cli, 100*time.Millisecond, 15*time.Second, func(out *[2][]esPkt, _ bool) bool {
		return time.Since(resumed) >= 1500*time.Millisecond && len(out[0]) > 0 && len(out[1]) > 0
	})
	if math.Abs(info[0].NPT-stop) > 0.01 {
		t.Errorf("PLAY on answered npt %.3f, want %g", info[0].NPT, stop)
	}
	for i, name := range []string{"video", "audio"} {
		if len(after[i]) == 0 {
			t.Fatalf("%s: nothing after the PLAY", name)
		}
		all := append(before[i], after[i]...)
		for k := 1; k < len(all); k++ {
			if all[k].seq != all[k-1].seq+1 {
				t.Fatalf("%s: sequence %d after %d", name, all[k].seq, all[k-1].seq)
			}
		}
		if got := after[i][0].seq; got != info[i].Seq {
			t.Errorf("%s: first packet after the PLAY numbered %d, RTP-Info said %d", name, got, info[i].Seq)
		}
		clock := 90000.0
		if i == 1 {
			clock = rate
		}
		if g := float64(maxGap(all)) / clock; g > 0.25 {
			t.Errorf("%s: %.3f s of media skipped across the Range's end", name, g)
		}
		if i == 1 {
			for k := 1; k < len(all); k++ {
				if int32(all[k].ts-all[k-1].ts) <= 0 {
					t.Fatalf("audio: timestamp %d after %d (sent twice?)", all[k].ts, all[k-1].ts)
				}
			}
		}
	}
}

// readESFrames reads the RTP packets of cli as readES does, but a frame
// begun is read whole (a deadline in its middle would leave the rest of
// it to be read as the next frame), until done(&out, quiet), asked after
// each packet and whenever no RTP came for quiet (quiet true; RTCP, which
// a held play goes on sending, does not count). It fails the test when
// that takes more than most.
func readESFrames(t *testing.T, cli net.Conn, quiet, most time.Duration, done func(out *[2][]esPkt, quiet bool) bool) (out [2][]esPkt) {
	t.Helper()
	buf := make([]byte, 65536)
	lastRTP := time.Now()
	for end := time.Now().Add(most); ; {
		if time.Now().After(end) {
			t.Fatalf("%d video and %d audio packets in %v, still not what was awaited (a play that did not stop?)", len(out[0]), len(out[1]), most)
		}
		ch, b, ok := readFrame(t, cli, buf, lastRTP.Add(quiet))
		if !ok || ch%2 == 1 { // nothing, or RTCP
			if time.Since(lastRTP) >= quiet {
				if done(&out, true) {
					return out
				}
				lastRTP = time.Now() // asked again after another quiet
			}
			continue
		}
		lastRTP = time.Now()
		var p rtp.Packet
		if err := p.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		out[ch/2] = append(out[ch/2], esPkt{time.Now(), p.SequenceNumber, p.Timestamp})
		if done(&out, false) {
			return out
		}
	}
}

// readUntilHeld reads cli with readESFrames until st's play holds at its
// Range's end and nothing came for quiet from a moment it held: every
// packet sent before is read then, and none comes after. A quiet spell
// with the play's clock at the stop (its Position) is not enough: a
// loaded machine's stall of the sender leaves packets due before the stop
// to come after it.
func readUntilHeld(t *testing.T, st *ESStream, cli net.Conn, quiet, most time.Duration) [2][]esPkt {
	t.Helper()
	held := false // the play held at the last call, before this quiet spell
	return readESFrames(t, cli, quiet, most, func(_ *[2][]esPkt, q bool) bool {
		if q && held {
			return true
		}
		held = esHeld(st)
		return false
	})
}

// esHeld reports whether st's play is held (a PAUSE, or its Range's end:
// its sender sets it once it has sent what is due before the stop).
func esHeld(st *ESStream) bool {
	st.mu.Lock()
	p := st.play
	st.mu.Unlock()
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// readUntilFillWait reads cli with readESFrames, from the start of st's
// play, until the play waits for its title's fill (WaitingForFill) and
// every packet it queued has been read: nothing more comes until the fill
// goes on. WaitingForFill and a quiet spell are not enough: the units
// read before the wait (up to esReadAhead of them) are still sent after
// it, and a loaded machine's stall of the sender makes a quiet spell
// before them.
func readUntilFillWait(t *testing.T, st *ESStream, cli net.Conn, quiet, most time.Duration) [2][]esPkt {
	t.Helper()
	return readESFrames(t, cli, quiet, most, func(out *[2][]esPkt, _ bool) bool {
		if !st.WaitingForFill() { // once it waits, it waits until the fill goes on
			return false
		}
		return uint64(len(out[0])+len(out[1])) == esPushed(st)
	})
}

// esPushed returns how many RTP packets st's play has queued to be sent.
func esPushed(st *ESStream) uint64 {
	st.mu.Lock()
	p := st.play
	st.mu.Unlock()
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pushed
}
