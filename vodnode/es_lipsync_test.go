package vodnode

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"
)

// TestGStreamerESLipSync plays a whole title's elementary streams with
// GStreamer's rtspsrc over TCP, in its jitterbuffer's default mode
// (slave: each track timed by its packets' arrivals against their RTP
// timestamps) and in the modes that time them by the timestamps and the
// sender reports (synced, none), recording both tracks as the player
// timestamps them (running time, the time each is rendered at) into
// Matroska; each recorded picture and audio frame is matched with its
// PTS in the title (counted from the title's end: every one arrives over
// TCP, and the depayloaders may drop the timestamps of a few at the
// start), and the audio must be rendered within 60 ms of the video of the
// same time. Pictures are sent at their DTS, up to the reorder delay
// (200 ms in the sample titles) before their timestamps; audio sent at
// its PTS was rendered 130 to 175 ms after the video in slave mode,
// growing as the jitterbuffer settled on the pictures' earliest
// arrivals.
func TestGStreamerESLipSync(t *testing.T) {
	if _, err := exec.LookPath("gst-launch-1.0"); err != nil {
		t.Skip("gst-launch-1.0 not installed")
	}
	if _, err := exec.LookPath("ffprobe"); err != nil {
		t.Skip("ffprobe not installed")
	}
	t.Parallel() // real-time bound: overlaps the other real-client tests
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	const title = "sample-001"
	video, audio := titleTimes(t, o.titles[title])
	for _, mode := range []string{"", "synced", "none"} {
		name := mode
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := esURL(n, mint(t, "lipsync-"+name, title, "node-1", "", time.Minute), title)
			rec := filepath.Join(t.TempDir(), "rec.mkv")
			args := []string{"-e", "rtspsrc", "location=" + url, "protocols=tcp", "name=src"}
			if mode != "" {
				args = append(args, "buffer-mode="+mode)
			}
			args = append(args,
				"src.", "!", "rtph264depay", "!", "h264parse", "!", "queue", "!", "mux.",
				"src.", "!", "rtpmp4gdepay", "!", "aacparse", "!", "queue", "!", "mux.",
				"matroskamux", "name=mux", "!", "filesink", "location="+rec)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, "gst-launch-1.0", args...).CombinedOutput()
			if ctx.Err() != nil || (err != nil && !gstRace(string(out))) {
				t.Fatalf("gst-launch-1.0: %v\n%s", err, out)
			}
			gv, ga := recordedTimes(t, rec)
			// From 4 s of the title on: past the jitterbuffer's first
			// estimates (its window is 2 s).
			from := video[0] + 4*90000
			v, vs := offsetFrom(gv, video, from)
			a, as := offsetFrom(ga, audio, from)
			t.Logf("%d of %d pictures, %d of %d audio frames recorded; audio rendered %.1f ms after the video of its time", len(gv), len(video), len(ga), len(audio), a-v)
			// Pictures paired with others than their own (one missing
			// within the window) are tens of ms off each other's offset
			// (the B-frames' order), an audio frame 21 ms; the audio's
			// offset moves on by up to 30 ms while the jitterbuffer
			// settles.
			if vs > 10 || as > 50 || len(gv) != len(video) || len(ga) < len(audio)-20 {
				t.Fatalf("recorded timestamps do not follow the title's (offsets spread %.1f ms video, %.1f ms audio): %d of %d pictures, %d of %d audio frames",
					vs, as, len(gv), len(video), len(ga), len(audio))
			}
			if d := a - v; d > 60 || d < -60 {
				t.Errorf("audio rendered %.1f ms after the video of the same time, want within 60 ms", d)
			}
		})
	}
}

// titleTimes returns the PTS (90 kHz) of each picture, in decoding order,
// and of each audio frame of an MPEG-TS title, as mediacommon's reader
// (the node's demultiplexer) gives them.
func titleTimes(t *testing.T, data []byte) (video, audio []int64) {
	t.Helper()
	r := &mpegts.Reader{R: bytes.NewReader(data)}
	if err := r.Initialize(); err != nil {
		t.Fatal(err)
	}
	r.OnDecodeError(func(error) {})
	for _, tr := range r.Tracks() {
		switch c := tr.Codec.(type) {
		case *mpegts.CodecH264:
			r.OnDataH264(tr, func(pts, _ int64, _ [][]byte) error {
				video = append(video, pts)
				return nil
			})
		case *mpegts.CodecMPEG4Audio:
			rate := int64(c.Config.SampleRate)
			r.OnDataMPEG4Audio(tr, func(pts int64, aus [][]byte) error {
				for i := range aus {
					audio = append(audio, pts+int64(i)*1024*90000/rate)
				}
				return nil
			})
		}
	}
	for i := 0; i < 1e6 && r.Read() == nil; i++ {
	}
	if len(video) == 0 || len(audio) == 0 {
		t.Fatalf("title: %d pictures, %d audio frames", len(video), len(audio))
	}
	return video, audio
}

// recordedTimes returns the timestamps (ms) of the video and the audio
// packets of a recording, in its order, as ffprobe reads them.
func recordedTimes(t *testing.T, path string) (video, audio []float64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-show_entries", "packet=stream_index,pts_time", "-of", "csv=p=0", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	for l := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSpace(l), ",")
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "0":
			video = append(video, v*1000)
		case "1":
			audio = append(audio, v*1000)
		}
	}
	if len(video) == 0 || len(audio) == 0 {
		t.Fatalf("recording: %d video and %d audio packets", len(video), len(audio))
	}
	return video, audio
}

// offsetFrom pairs the last recorded timestamps (ms) with the title's
// last PTS (90 kHz), from the end, and returns the median of the
// recorded less the title's time (ms) over those of the title at or
// after from, with the spread of the middle 90% of them.
func offsetFrom(rec []float64, title []int64, from int64) (median, spread float64) {
	var d []float64
	for j := 1; j <= len(rec) && j <= len(title); j++ {
		if m := title[len(title)-j]; m >= from {
			d = append(d, rec[len(rec)-j]-float64(m)/90)
		}
	}
	if len(d) == 0 {
		return 0, 1e9
	}
	slices.Sort(d)
	return d[len(d)/2], d[len(d)-1-len(d)/20] - d[len(d)/20]
}
