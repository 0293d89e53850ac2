package deliver

import (
	"os/exec"
	"testing"
	"time"

	"github.com/pion/rtp"
)

// TestESSecondAudioTrackNotSent: a title with two AAC tracks (two
// languages) plays the first one alone on the audio RTP stream, the one
// ProbeES offered in the SDP: each audio packet carries access units
// later than the one before. Both used to be sent on that stream, every
// audio time twice (two tracks' frames, each of the other's config, on
// one SSRC).
func TestESSecondAudioTrackNotSent(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	cmd := exec.Command("ffmpeg", "-v", "error", "-i", "../../cdp/samples/clip-a.ts",
		"-map", "0:v", "-map", "0:a", "-map", "0:a", "-c", "copy", "-f", "mpegts", "pipe:1")
	data, err := cmd.Output()
	if err != nil || len(data) == 0 {
		t.Fatalf("ffmpeg: %v", err)
	}
	e := startEngine(t, false)
	st, tr, cli := playESOverTCP(t, e, newMemSource(data))
	if tr.Video == nil || tr.Audio == nil {
		t.Fatalf("tracks %+v, want video and audio", tr)
	}
	if _, err := st.Seek(0); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	// 40 audio packets (~4 s of the title's audio), however long a loaded
	// machine takes (up to 20 s).
	buf := make([]byte, 65536)
	end := time.Now().Add(20 * time.Second)
	var ts []uint32
	for len(ts) < 40 {
		ch, b, ok := readFrame(t, cli, buf, end)
		if !ok {
			t.Fatalf("%d audio packets in 20 s", len(ts))
		}
		if ch != 2 {
			continue // video, RTCP
		}
		var p rtp.Packet
		if err := p.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		if n := len(ts); n > 0 && int32(p.Timestamp-ts[n-1]) <= 0 {
			t.Fatalf("audio packet %d: timestamp %d after %d (earlier times %v): a second audio track sent on the stream", n, p.Timestamp, ts[n-1], ts)
		}
		ts = append(ts, p.Timestamp)
	}
}
