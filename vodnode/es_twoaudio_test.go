package vodnode

import (
	"bytes"
	"context"
	"encoding/binary"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4"
	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/bluenviron/gortsplib/v4/pkg/description"
	"github.com/bluenviron/gortsplib/v4/pkg/format"
	"github.com/bluenviron/gortsplib/v4/pkg/headers"
	"github.com/pion/rtp"
)

// toneOf plays seconds of the audio stream map (ffmpeg -map, e.g. 0:a:1)
// of url with ffmpeg over TCP, decoded to mono at 8 kHz, and returns its
// tone's frequency (Hz, counted by zero crossings).
func toneOf(t *testing.T, url, stream string, seconds float64) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "ffmpeg", "-v", "error", "-rtsp_transport", "tcp", "-i", url, "-map", stream,
		"-t", strconv.FormatFloat(seconds, 'f', 3, 64), "-ac", "1", "-ar", "8000", "-f", "s16le", "pipe:1")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ffmpeg -map %s: %v\n%s", stream, err, stderr.String())
	}
	n := len(out) / 2
	if float64(n) < (seconds-0.5)*8000 {
		t.Fatalf("ffmpeg -map %s: %d samples, want %.1f s at 8 kHz\n%s", stream, n, seconds, stderr.String())
	}
	// Past the decoder's start (its first frames' priming).
	from := 2000
	crossings := 0
	prev := int16(binary.LittleEndian.Uint16(out[2*from:]))
	for i := from + 1; i < n; i++ {
		v := int16(binary.LittleEndian.Uint16(out[2*i:]))
		if (prev < 0) != (v < 0) {
			crossings++
		}
		prev = v
	}
	return float64(crossings) / 2 / (float64(n-from-1) / 8000)
}

// TestESTwoAudioTracks: a title with two AAC tracks (two languages) is
// offered at /es with each as its own audio media (trackID=2 and 3, payload
// types 97 and 98, each its own sample rate and config, a=lang from the
// PMT), which ffprobe lists with their languages; ffmpeg playing the
// second (-map 0:a:1) hears its 1 kHz tone, the first its 440 Hz; and a
// client that sets up the video and the second audio alone is sent that
// track (payload type 98, RTP-Info for the two it set up). (Only the first
// audio track was offered: a viewer had no choice of language.)
func TestESTwoAudioTracks(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	o := newFakeOrigin(t)
	const title = "twoaudio-001"
	o.titles[title] = twoAudioTitle(t, o.titles["sample-001"])
	n := startNode(t, startOrigin(t, o))
	waitPrefetch(t, n, title)

	url := esURL(n, mint(t, "es-two-describe", title, "node-1", "", time.Minute), title)
	c := dialRTSP(t, n)
	res := c.do("DESCRIBE", url)
	if res.StatusCode != 200 {
		t.Fatalf("DESCRIBE: %s", statusLine(res))
	}
	for _, want := range []string{"m=audio 0 RTP/AVP 97", "a=rtpmap:97 mpeg4-generic/48000", "a=control:trackID=2", "a=lang:eng",
		"m=audio 0 RTP/AVP 98", "a=rtpmap:98 mpeg4-generic/44100", "a=control:trackID=3", "a=lang:fra"} {
		if !strings.Contains(string(res.Body), want) {
			t.Errorf("SDP lacks %q:\n%s", want, res.Body)
		}
	}
	if res := c.do("SETUP", url+"/trackID=4", "Transport", "RTP/AVP/TCP;unicast"); res.StatusCode != 404 {
		t.Errorf("SETUP of trackID=4: %s", statusLine(res))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-rtsp_transport", "tcp",
		"-show_entries", "stream=codec_name,sample_rate:stream_tags=language", "-of", "csv=p=0",
		esURL(n, mint(t, "es-two-probe", title, "node-1", "", time.Minute), title)).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	if got := strings.Fields(string(out)); len(got) != 3 || got[0] != "h264" || got[1] != "aac,48000,eng" || got[2] != "aac,44100,fra" {
		t.Errorf("ffprobe streams %q, want h264 and two AAC (48000 eng, 44100 fra)", got)
	}

	for _, tc := range []struct {
		stream string
		hz     float64
	}{{"0:a:1", 1000}, {"0:a:0", 440}} {
		hz := toneOf(t, esURL(n, mint(t, "es-two-"+tc.stream, title, "node-1", "", time.Minute), title), tc.stream, 3)
		t.Logf("ffmpeg -map %s: %.0f Hz", tc.stream, hz)
		if hz < tc.hz*0.95 || hz > tc.hz*1.05 {
			t.Errorf("ffmpeg -map %s heard %.0f Hz, want %.0f Hz", tc.stream, hz, tc.hz)
		}
	}

	// Video and the second audio alone.
	u, err := base.ParseURL(esURL(n, mint(t, "es-two-second", title, "node-1", "", time.Minute), title))
	if err != nil {
		t.Fatal(err)
	}
	tr := gortsplib.TransportTCP
	gc := gortsplib.Client{Scheme: u.Scheme, Host: u.Host, Transport: &tr}
	if err := gc.Start2(); err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	desc, _, err := gc.Describe(u)
	if err != nil {
		t.Fatal(err)
	}
	if len(desc.Medias) != 3 {
		t.Fatalf("%d medias, want video and two audio", len(desc.Medias))
	}
	for _, m := range []*description.Media{desc.Medias[0], desc.Medias[2]} {
		if _, err := gc.Setup(desc.BaseURL, m, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	pts := map[uint8]int{} // audio packets by payload type
	audio := make(chan struct{}, 1)
	gc.OnPacketRTP(desc.Medias[2], desc.Medias[2].Formats[0], func(p *rtp.Packet) {
		mu.Lock()
		pts[p.PayloadType]++
		mu.Unlock()
		select {
		case audio <- struct{}{}:
		default:
		}
	})
	var video int
	gc.OnPacketRTP(desc.Medias[0], desc.Medias[0].Formats[0], func(*rtp.Packet) {
		mu.Lock()
		video++
		mu.Unlock()
	})
	if f, ok := desc.Medias[2].Formats[0].(*format.MPEG4Audio); !ok || f.ClockRate() != 44100 {
		t.Fatalf("second audio format %v", desc.Medias[2].Formats[0])
	}
	res2, err := gc.Play(nil)
	if err != nil {
		t.Fatal(err)
	}
	var ri headers.RTPInfo
	if err := ri.Unmarshal(res2.Header["RTP-Info"]); err != nil || len(ri) != 2 || !strings.HasSuffix(ri[1].URL, "trackID=3") {
		t.Errorf("RTP-Info %v (%v), want the video and trackID=3", res2.Header["RTP-Info"], err)
	}
	end := time.After(15 * time.Second)
	for done := false; !done; {
		select {
		case <-audio:
			mu.Lock()
			done = pts[98] >= 50 && video > 0
			mu.Unlock()
		case <-end:
			done = true
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if pts[98] < 50 || len(pts) != 1 || video == 0 {
		t.Errorf("second audio alone: audio packets by payload type %v, %d video packets; want 50 of 98 alone, and video", pts, video)
	}
}
