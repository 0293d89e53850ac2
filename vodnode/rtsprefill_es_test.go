package vodnode

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

// An elementary-stream viewer (/es/: H.264 and AAC tracks) playing a
// title whose fill failed half-way (the origin away longer than
// fill_retry_for) plays on past the bytes the failed fill left once the
// origin is back, without a PLAY, as an MP2T one does: when its play's
// reader reaches their end the node fills the title again for the
// session, and the play goes on from where it stands to the end of the
// title: every picture of the title, in its order (the RTP timestamps of
// the pictures are the title's presentation times in decoding order),
// each track's RTP sequence numbers following one another, the audio's
// timestamps never going back, and the BYEs of the end of the title. It
// was cut off there with its RTCP BYEs "fill failed", though the origin
// had come back long before.
func TestRTSPESPlayGoesOnPastAFailedFill(t *testing.T) {
	t.Parallel() // real-time bound: about 8 s
	o, n, data, cut := failingOriginNode(t, 2, 300*time.Millisecond)
	var pkts [2][]rtp.Header // per track: video, audio
	var byes [2]string
	c := dialRTSP(t, n)
	c.onFrame = func(ch int, b []byte) {
		if ch > 3 {
			t.Errorf("a frame on channel %d", ch)
			return
		}
		if ch%2 == 0 {
			var p rtp.Packet
			if err := p.Unmarshal(b); err != nil {
				t.Errorf("RTP on channel %d: %v", ch, err)
				return
			}
			pkts[ch/2] = append(pkts[ch/2], p.Header)
			return
		}
		ps, _ := rtcp.Unmarshal(b)
		for _, p := range ps {
			if g, ok := p.(*rtcp.Goodbye); ok && byes[ch/2] == "" {
				byes[ch/2] = g.Reason
			}
		}
	}
	url := esURL(n, mint(t, "rtsp-refill-es-playing", "short-001", "node-1", "", 10*time.Minute), "short-001")
	id := c.playES(url)
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for n.store.FillsFailed()["origin"] == 0 {
		if _, _, err := c.frame(); err != nil {
			t.Fatalf("waiting for the fill to fail, %d video packets read: %v", len(pkts[0]), err)
		}
	}
	if byes != [2]string{} {
		t.Fatalf("BYEs %q before the origin was back", byes)
	}
	o.failAt.Store(0) // the origin is back, whole, before the play's reader reaches the cut
	c.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	for byes[0] == "" || byes[1] == "" {
		if _, _, err := c.frame(); err != nil {
			t.Fatalf("BYEs %q after %d video and %d audio packets: %v", byes, len(pkts[0]), len(pkts[1]), err)
		}
	}
	if byes != [2]string{"end of title", "end of title"} {
		t.Fatalf("the play ended with BYEs %q, want the title's end's", byes)
	}
	for i, hs := range pkts {
		for k := 1; k < len(hs); k++ {
			if hs[k].SequenceNumber != hs[k-1].SequenceNumber+1 {
				t.Fatalf("track %d, RTP packet %d: sequence number %d after %d", i, k, hs[k].SequenceNumber, hs[k-1].SequenceNumber)
			}
			if d := int32(hs[k].Timestamp - hs[k-1].Timestamp); i == 1 && (d < 0 || d > 48000/2) {
				t.Fatalf("audio RTP packet %d: timestamp %d after %d (%+d ticks)", k, hs[k].Timestamp, hs[k-1].Timestamp, d)
			}
		}
	}
	// The pictures: one per marked packet, its timestamp the picture's
	// PTS (90 kHz) from the track's base.
	var pics []int64
	for _, h := range pkts[0] {
		if h.Marker {
			pics = append(pics, int64(int32(h.Timestamp-pkts[0][0].Timestamp)))
		}
	}
	want := videoPTS(t, data)
	if !slices.Equal(pics, want) {
		k := 0
		for k < len(pics) && k < len(want) && pics[k] == want[k] {
			k++
		}
		t.Fatalf("%d pictures, want the title's %d in its order; the same up to picture %d (the fill stopped at byte %d of %d)",
			len(pics), len(want), k, cut, len(data))
	}
	checkRefilledForSession(t, n)
	teardownReleases(t, n, c, url, id)
}

// videoPTS returns the presentation times of the pictures of the MPEG-TS
// title data, in decoding order, from the first one's, 90 kHz ticks, as
// ffprobe reads them.
func videoPTS(t *testing.T, data []byte) []int64 {
	t.Helper()
	file := filepath.Join(t.TempDir(), "title.ts")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts",
		"-of", "csv=p=0", file).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	var pts []int64
	for _, l := range strings.Fields(string(out)) {
		v, err := strconv.ParseInt(strings.TrimSuffix(l, ","), 10, 64)
		if err != nil {
			t.Fatalf("ffprobe packet pts %q", l)
		}
		pts = append(pts, v)
	}
	for i := len(pts) - 1; i >= 0; i-- {
		pts[i] -= pts[0]
	}
	return pts
}
