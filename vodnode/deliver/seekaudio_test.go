package deliver

import (
	"bytes"
	"math"
	"os/exec"
	"testing"
	"time"

	"vodcluster/cdp/tsindex"
)

// TestSeekIntoFillingPartAudioOnly: an MP2T PLAY into the part of a title
// without video still filling starts, once the fill gets there, at the
// time asked by the title's clock, as a seek on the complete title does
// (seekOffset). It started at the offset the announced bitrate gave, at
// another time when the title's real bitrate is not the announced one
// (here 1.5 times it: 12 s for a seek to 8 s).
func TestSeekIntoFillingPartAudioOnly(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	cmd := exec.Command("ffmpeg", "-v", "error", "-i", "../../cdp/samples/clip-a.ts", "-map", "0:a", "-c", "copy",
		"-f", "mpegts", "pipe:1")
	data, err := cmd.Output()
	if err != nil || len(data) == 0 {
		t.Fatalf("ffmpeg: %v", err)
	}
	full, err := tsindex.BuildFrom(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	fullCk := clockOf{idx: full}
	if len(full.Keyframes) != 0 || !fullCk.ok() || fullCk.npt(full.Size) < 14 {
		t.Fatalf("audio-only sample: %d keyframes, %.1f s", len(full.Keyframes), fullCk.npt(full.Size))
	}
	const npt = 8
	e := startEngine(t, false)
	src := newFillingSource(data)
	src.reveal(len(prefix(t, data, 2)))
	srv, cli := tcpPair(t)
	st, err := e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), SSRC: 7,
		Bitrate: full.Bitrate() * 3 / 2})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Play(npt); err != nil {
		t.Fatal(err)
	}
	src.reveal(len(data))
	media, _, _ := readFrames(t, cli, 4*PayloadSize, 5*time.Second)
	for i := 0; i+TSPacketSize <= len(media); i += TSPacketSize {
		p := media[i : i+TSPacketSize]
		if pid := uint16(p[1]&0x1f)<<8 | uint16(p[2]); pid == 0 || pid == 0x1000 {
			continue // the PAT and PMT sent first
		}
		off := bytes.Index(data, p)
		if off < 0 {
			t.Fatal("a packet sent is not in the title")
		}
		if at := fullCk.seconds(int64(off)); math.Abs(at-npt) > 0.5 {
			t.Fatalf("the seek to %d s started at offset %d, %.3f s", npt, off, at)
		}
		return
	}
	t.Fatal("no media packet after the seek")
}
