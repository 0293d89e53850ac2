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

// TestESSecondAudioPauseResumesExactly is TestESPauseResumesExactly for a
// play of the video and the second of two audio tracks alone (on channel
// 2): a PAUSE holds it, nothing is sent while paused, and a PLAY without
// Range goes on from the next packet of each, the second track's RTP-Info
// (SeekTracks' third entry) naming its next packet.
func TestESSecondAudioPauseResumesExactly(t *testing.T) {
	src := newMemSource(twoAudioTitle(t))
	tr, err := ProbeES(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	e := startEngine(t, false)
	srv, cli := tcpPair(t)
	st, err := e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0),
		Channel: [2]int{0, -1}, More: []ESTrackConfig{{Channel: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.SeekTracks(4); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	before := readES(t, cli, 1500*time.Millisecond)
	pos := st.Pause()
	tail := readES(t, cli, 300*time.Millisecond)
	if quiet := readES(t, cli, 700*time.Millisecond); len(quiet[0])+len(quiet[1]) > 0 {
		t.Fatalf("%d video and %d audio packets while paused", len(quiet[0]), len(quiet[1]))
	}
	info, err := st.SeekTracks(-1)
	if err != nil || len(info) != 3 {
		t.Fatalf("SeekTracks(-1): %v, %d tracks", err, len(info))
	}
	st.Resume()
	after := readES(t, cli, 1500*time.Millisecond)
	if info[2].NPT != pos {
		t.Errorf("paused at %.3f, PLAY answered %.3f", pos, info[2].NPT)
	}
	for i, k := range []int{0, 2} { // readES's channel 2: the second audio track
		all := append(append(before[i], tail[i]...), after[i]...)
		if len(after[i]) == 0 || len(before[i]) == 0 {
			t.Fatalf("track %d: %d packets before the pause, %d after", k, len(before[i]), len(after[i]))
		}
		for j := 1; j < len(all); j++ {
			if all[j].seq != all[j-1].seq+1 {
				t.Fatalf("track %d: sequence %d after %d", k, all[j].seq, all[j-1].seq)
			}
		}
		if got := after[i][0].seq; got != info[k].Seq {
			t.Errorf("track %d: first packet after the PLAY numbered %d, RTP-Info said %d", k, got, info[k].Seq)
		}
		if k == 2 {
			rate := float64(tr.AudioTracks()[1].Format.ClockRate())
			if d := float64(int32(after[i][0].ts-info[k].RTPTime)) / rate; d < -0.6 || d > 0.3 {
				t.Errorf("second audio: first packet after the PLAY %.3f s from RTP-Info's time", d)
			}
		}
	}
}
