package deliver

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestSeekIntoFillingPartKeyframeAsComplete: a seek into the part of a
// title still filling starts at the keyframe a seek on the complete title
// starts at, however far the fill has got when the choice is made. The
// choice waited for the index's npt (the clock at its end, shifted by the
// last keyframe's mux delay) to pass the seek; the delay varies from
// keyframe to keyframe (-0.65 to +0.01 s in the sample), so just before a
// keyframe whose delay drops the index's npt had passed a seek 0.05 s
// after that keyframe's time, and the play started a GOP early. Each
// keyframe's time + 0.05 s is sought on every prefix of the sample, 7 TS
// packets at a time; a choice made (not estimated) must be the complete
// title's.
func TestSeekIntoFillingPartKeyframeAsComplete(t *testing.T) {
	data, full, _, _ := sampleKeyframeBefore(t)
	fullCk := clockOf{idx: full}
	var seeks []float64
	var want []int64
	for k := range full.Keyframes {
		npt := fullCk.keyframeNPT(k) + 0.05
		off, _ := fullCk.keyframeBefore(npt)
		seeks, want = append(seeks, npt), append(want, off)
	}
	if len(seeks) < 3 {
		t.Fatalf("sample has %d keyframes, want at least 3", len(seeks))
	}
	st := &Stream{cfg: StreamConfig{Bitrate: full.Bitrate()}}
	src := newFillingSource(data)
	chosen := 0
	for n := PayloadSize; ; n += PayloadSize {
		src.reveal(min(n, len(data)))
		idx, complete, _ := src.State()
		if complete {
			break
		}
		ck := clockOf{idx: idx}
		for i, npt := range seeks {
			off, _, estimated, err := st.seekOffset(idx, false, ck, npt)
			if err != nil {
				t.Fatalf("filled %d: seek %.3f s: %v", idx.Size, npt, err)
			}
			if estimated {
				continue
			}
			chosen++
			if off != want[i] {
				t.Fatalf("filled %d of %d bytes: seek to %.3f s starts at offset %d, the complete title at %d", idx.Size, len(data), npt, off, want[i])
			}
		}
	}
	if chosen == 0 {
		t.Fatal("no seek was chosen before the title was complete")
	}
}

// earlySeek returns, for the sample, a prefix size at which the index's npt
// has passed a seek 0.05 s after a keyframe that is not indexed yet, the
// seek's npt, the offset of the keyframe before it (the one a choice made
// there would take) and the offset of the keyframe it starts at on the
// complete title.
func earlySeek(t *testing.T, data []byte) (size int, npt float64, early, want int64) {
	t.Helper()
	_, full, _, _ := sampleKeyframeBefore(t)
	fullCk := clockOf{idx: full}
	src := newFillingSource(data)
	for n := PayloadSize; n < len(data); n += PayloadSize {
		src.reveal(n)
		idx, _, _ := src.State()
		ck := clockOf{idx: idx}
		for k := range full.Keyframes {
			npt := fullCk.keyframeNPT(k) + 0.05
			want, _ := fullCk.keyframeBefore(npt)
			if !ck.ok() || npt >= ck.npt(idx.Size) {
				continue
			}
			if off, _ := ck.keyframeBefore(npt); off >= 0 && off != want {
				return n, npt, off, want
			}
		}
	}
	t.Fatal("sample: no keyframe whose mux delay drops enough")
	return
}

// TestSeekIntoFillingPartStreamWaitsForKeyframe: a PLAY into the part not
// filled yet, its keyframe revealed only after the index's npt has passed
// the seek (earlySeek), starts at that keyframe, not at the one before
// (a GOP early), as the stream's step chose once the index's npt passed.
func TestSeekIntoFillingPartStreamWaitsForKeyframe(t *testing.T) {
	e := startEngine(t, false)
	data, full, _, _ := sampleKeyframeBefore(t)
	size, target, early, want := earlySeek(t, data)
	src := newFillingSource(data)
	src.reveal(int(early)) // the seek is past the npt indexed: estimated
	srv, cli := tcpPair(t)
	st, err := e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), SSRC: 7, Bitrate: full.Bitrate()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Play(target); err != nil {
		t.Fatal(err)
	}
	src.reveal(size)
	// The stream has seen this prefix once it waits for bytes past it
	// (without the fix, after sending from the early keyframe up to it).
	src.awaitWaitPast(t, int64(size)-1)
	src.reveal(len(data))
	media, _, _ := readFrames(t, cli, 20*PayloadSize, 5*time.Second)
	for i := 0; i+TSPacketSize <= len(media); i += TSPacketSize {
		p := media[i : i+TSPacketSize]
		if pid := uint16(p[1]&0x1f)<<8 | uint16(p[2]); pid != full.VideoPID {
			continue
		}
		if bytes.Equal(p, data[early:early+TSPacketSize]) {
			t.Fatalf("the seek to %.3f s started at the keyframe at offset %d, a GOP early (want %d)", target, early, want)
		}
		if !bytes.Equal(p, data[want:want+TSPacketSize]) {
			t.Fatalf("the first video packet after the seek to %.3f s is not the keyframe at offset %d", target, want)
		}
		return
	}
	t.Fatal("no video packet after the seek")
}

// TestESSeekIntoFillingPartWaitsForKeyframe: the same for an
// elementary-stream play (/es, seekIndexed): it starts at the keyframe
// the complete title gives, not at the one before.
func TestESSeekIntoFillingPartWaitsForKeyframe(t *testing.T) {
	e := startEngine(t, false)
	data := loadClip(t)
	size, target, early, want := earlySeek(t, data)
	src := newFillingSource(data)
	src.reveal(len(data) / 4)
	tr, err := ProbeES(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	src2 := newFillingSource(data) // the same title, filled only to the early keyframe
	src2.reveal(int(early))
	srv, cli := tcpPair(t)
	st, err := e.NewESStream(ESConfig{Source: src2, Tracks: tr, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), Channel: [2]int{0, -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Seek(target); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	src2.reveal(size)
	src2.awaitWaitPast(t, int64(size)-1)
	src2.reveal(len(data))
	cli.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 65536)
	for {
		ch, _, err := nextFrame(cli, buf)
		if err != nil {
			t.Fatalf("no video after the seek: %v", err)
		}
		if ch == 0 {
			break
		}
	}
	st.mu.Lock()
	pos := st.pos
	st.mu.Unlock()
	if pos != want {
		t.Fatalf("the seek to %.3f s started at offset %d (the keyframe before it: %d), want %d", target, pos, early, want)
	}
}

// TestESSeekIntoFillingPartAnswered: an elementary-stream seek asked when
// the fill is at that prefix already does not take the keyframe before
// (SeekTracks): it waits for the one the complete title gives.
func TestESSeekIntoFillingPartAnswered(t *testing.T) {
	e := startEngine(t, false)
	data := loadClip(t)
	size, target, early, _ := earlySeek(t, data)
	src := newFillingSource(data)
	src.reveal(size)
	tr, err := ProbeES(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := tcpPair(t)
	st, err := e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), Channel: [2]int{0, -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	info, err := st.Seek(target)
	if err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	pos, seekTo := st.pos, st.seekTo
	st.mu.Unlock()
	if seekTo != target || info[0].NPT != target {
		t.Fatalf("the seek to %.3f s was placed at offset %d (npt %.3f; the keyframe before it: %d), want it to wait for its keyframe", target, pos, info[0].NPT, early)
	}
}
