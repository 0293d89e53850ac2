package deliver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/pion/rtp"

	"vodcluster/cdp/tsindex"
)

// esPkt is an RTP packet of an elementary-stream track as a test saw it.
type esPkt struct {
	at  time.Time // when it arrived
	seq uint16
	ts  uint32
}

// playESOverTCP makes an elementary-stream play of src over an
// interleaved TCP pair (video on channel 0, audio on 2), closed when the
// test ends, and returns it, the tracks probed and the client's end.
func playESOverTCP(t *testing.T, e *Engine, src Source) (*ESStream, *ESTracks, net.Conn) {
	t.Helper()
	tr, err := ProbeES(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	srv, cli := tcpPair(t)
	st, err := e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), Channel: [2]int{0, 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, tr, cli
}

// readFrame reads the next interleaved frame of cli, its first byte
// awaited until deadline (false when none came: a timeout) and the rest
// read whole, so that a deadline never leaves part of a frame to be read
// as the next.
func readFrame(t *testing.T, cli net.Conn, buf []byte, deadline time.Time) (ch byte, b []byte, ok bool) {
	t.Helper()
	cli.SetReadDeadline(deadline)
	var first [1]byte
	if _, err := cli.Read(first[:]); err != nil {
		if ne, isNet := err.(net.Error); isNet && ne.Timeout() {
			return 0, nil, false
		}
		t.Fatal(err)
	}
	cli.SetReadDeadline(time.Now().Add(10 * time.Second))
	ch, b, err := nextFrame(io.MultiReader(bytes.NewReader(first[:]), cli), buf)
	if err != nil {
		t.Fatal(err)
	}
	return ch, b, true
}

// readES reads the RTP packets of the interleaved channels 0 (video) and
// 2 (audio) from cli for d (RTCP skipped), per track. A frame whose first
// byte came within d is read whole, so that the next call starts at a
// frame (a deadline in its middle left the rest to be read as one).
func readES(t *testing.T, cli net.Conn, d time.Duration) (out [2][]esPkt) {
	t.Helper()
	end := time.Now().Add(d)
	buf := make([]byte, 65536)
	for {
		ch, b, ok := readFrame(t, cli, buf, end)
		if !ok {
			return out
		}
		if ch%2 == 1 {
			continue // RTCP
		}
		var p rtp.Packet
		if err := p.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		out[ch/2] = append(out[ch/2], esPkt{time.Now(), p.SequenceNumber, p.Timestamp})
	}
}

// maxGap returns the largest interval between the distinct timestamps of
// ps (in the order of time, whatever their order of arrival: pictures
// carry their PTS), RTP clock ticks.
func maxGap(ps []esPkt) uint32 {
	var ts []uint32
	for _, p := range ps {
		ts = append(ts, p.ts)
	}
	slices.Sort(ts)
	ts = slices.Compact(ts)
	gap := uint32(0)
	for k := 1; k < len(ts); k++ {
		gap = max(gap, ts[k]-ts[k-1])
	}
	return gap
}

// TestESTimestampJump: a title whose PTS and DTS jump by 10 s, forward or
// backward, while its PCR runs on (a splice of two encodes): the play goes
// on at the pace of the clock, both tracks, with RTP timestamps that run
// on without the jump, each packet sent about as long after its time as
// before the jump, and a position on the title's index, which absorbs the
// jump too: npt runs on across it. (A jump forward
// stalled the play for its 10 s, waiting for the packets' times; one
// backward stalled the packets read before it and sent the others with
// timestamps 10 s back.)
func TestESTimestampJump(t *testing.T) {
	for _, jump := range []float64{10, -10} {
		t.Run(fmt.Sprintf("%+.0fs", jump), func(t *testing.T) {
			t.Parallel()
			testESTimestampJump(t, jump)
		})
	}
}

func testESTimestampJump(t *testing.T, jump float64) {
	e := startEngine(t, false)
	clip := loadClip(t)
	at := len(prefix(t, clip, 5)) // the clock's 5 s
	st, tr, cli := playESOverTCP(t, e, newMemSource(shiftTimestampsFrom(t, clip, int64(jump*tsindex.PTSHz), at, false)))
	if _, err := st.Seek(3); err != nil { // the jump 1.9 s in (the title's 4.9 s)
		t.Fatal(err)
	}
	st.Resume()
	start := time.Now()
	const window = 4500 * time.Millisecond
	got := readES(t, cli, window)
	pos := st.Position()
	elapsed := time.Since(start)
	for i, name := range []string{"video", "audio"} {
		clock := 90000.0
		if i == 1 {
			clock = float64(tr.Audio.ClockRate())
		}
		ps := got[i]
		if len(ps) < 20 {
			t.Fatalf("%s: %d packets in %v", name, len(ps), window)
		}
		// A jump forward stalled the play 1.9 s in: nothing after it.
		if last := ps[len(ps)-1].at.Sub(start); last < 3*time.Second {
			t.Errorf("%s: the last packet came %v into the play, nothing in the %v after", name, last, window-last)
		}
		if g := float64(maxGap(ps)) / clock; g > 0.25 {
			t.Errorf("%s: RTP timestamps skip %.3f s", name, g)
		}
		// Each packet leaves as long after its time after the jump as
		// before it (a picture at its DTS, a little before its PTS):
		// the timeline runs on at the clock's pace across the jump.
		// Compared are the packets that came from 0.5 s to 1.5 s into
		// the play and those from 2.5 s on: the earliest of each within
		// 0.15 s. A timeline shifted at the jump moves every packet
		// after it, the earliest too; packets sent in bursts after it
		// leave early, ahead of their time, which a loaded machine never
		// makes one do (it delays them). Their medians are not compared:
		// a loaded machine's stalls delay many packets of one window and
		// move its median (0.3 s apart so with a 20 ms stall after one
		// write in 8).
		var before, after []float64
		for k, p := range ps {
			if k > 0 && i == 1 && int32(p.ts-ps[k-1].ts) <= 0 {
				t.Fatalf("audio: timestamp %d after %d", p.ts, ps[k-1].ts)
			}
			at := p.at.Sub(start)
			late := at.Seconds() - float64(int32(p.ts-ps[0].ts))/clock
			switch {
			case at < 500*time.Millisecond: // the audio before the first picture, sent at once
			case at < 1500*time.Millisecond:
				before = append(before, late)
			case at >= 2500*time.Millisecond:
				after = append(after, late)
			}
		}
		if len(before) < 3 || len(after) < 3 {
			t.Errorf("%s: %d packets 0.5 to 1.5 s into the play, %d from 2.5 s", name, len(before), len(after))
			continue
		}
		slices.Sort(before)
		slices.Sort(after)
		if b0, a0 := before[0], after[0]; math.Abs(a0-b0) > 0.15 {
			t.Errorf("%s: the earliest packet leaves %.3f s after its time before the jump, %.3f s after it: want the same within 0.15 s", name, b0, a0)
		}
	}
	// From 3 s, at 3 s + the time played: the index's timeline absorbs
	// the jump as the play's does. A loaded machine may start the play
	// late: up to 1.5 s behind the time since the Resume.
	if want := 3 + elapsed.Seconds(); pos < want-1.5 || pos > want+0.2 {
		t.Errorf("position %.3f s %v after the play from 3 s, want about %.1f", pos, elapsed, want)
	}
}

// TestESPlacePerTrack drives esPlay.place with the timestamps of a video
// track (DTS every 40 ms) and an audio track (a PES every 64 ms) read as a
// title's clock runs, the audio 0.7 s of clock after the video of its
// time, and checks the shifts it gives: none while the timestamps keep
// with the clock; for a jump, each track going on at its cadence or, when
// both jump about alike, with one shift (the new encode's relation of its
// tracks kept) as long as the track's timestamps still increase.
func TestESPlacePerTrack(t *testing.T) {
	const sec = tsindex.PTSHz
	step := [2]int64{3600, 5760}
	// play places the units of both tracks over the clock's 1 s to 8 s,
	// the timestamps of track i moved by jump[i] from the clock's 4 s (in
	// the file: the audio's 0.7 s later in media time), or with bogus by
	// 20 s for the one picture read at the clock's 6 s. It returns the
	// shifts of the last units, the jumps absorbed and, per track, the
	// interval between its placed timestamps around its jump.
	play := func(jump [2]int64, bogus bool) (shift [2]int64, jumps int, across [2]int64) {
		p := newESPlay()
		var last [2]int64
		for c := int64(sec); c < 8*sec; c += 360 {
			for i := range 2 {
				ts := c - int64(i)*63000
				if ts%step[i] != 0 {
					continue
				}
				if c >= 4*sec {
					ts += jump[i]
				}
				if bogus && i == 0 && c == 6*sec {
					ts += 20 * sec
				}
				shift[i] = p.place(i, ts, c)
				placed := ts + shift[i]
				if d := placed - last[i]; last[i] != 0 && d != step[i] {
					if d <= 0 || across[i] != 0 && !bogus {
						t.Fatalf("jump %v: track %d at the clock's %.3f s placed %d after %d", jump, i, float64(c)/sec, placed, last[i])
					}
					across[i] = d
				}
				last[i] = placed
			}
		}
		return shift, p.jumps, across
	}
	if s, n, _ := play([2]int64{}, false); s != [2]int64{} || n != 0 {
		t.Errorf("continuous: shifts %v, %d jumps", s, n)
	}
	// Both tracks 10 s on, the audio of the new encode 30 ms later than
	// its video: the audio takes the video's shift, 30 ms past its cadence.
	if s, n, a := play([2]int64{10 * sec, 10*sec + 2700}, false); s != [2]int64{-10 * sec, -10 * sec} || n != 2 || a != [2]int64{0, step[1] + 2700} {
		t.Errorf("+10 s: shifts %v, %d jumps, intervals across %v", s, n, a)
	}
	// Back 10 s, the audio 0.2 s earlier than its video: with the video's
	// shift its timestamps would go back, so it keeps its cadence.
	if s, n, a := play([2]int64{-10 * sec, -10*sec - 18000}, false); s != [2]int64{10 * sec, 10*sec + 18000} || n != 2 || a != [2]int64{} {
		t.Errorf("-10 s: shifts %v, %d jumps, intervals across %v", s, n, a)
	}
	// One bogus picture: its shift, then none again.
	if s, n, _ := play([2]int64{}, true); s != [2]int64{} || n != 2 {
		t.Errorf("a bogus timestamp: shifts %v, %d jumps", s, n)
	}
}
