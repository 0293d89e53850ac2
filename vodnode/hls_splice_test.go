package vodnode

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"vodcluster/cdp/tsindex"
)

// TestHLSDiscontinuityAtASplice: the HLS playlist of a title spliced
// without stamping it again (its timestamps start again at the join)
// cuts a segment at the join's keyframe and tags it EXT-X-DISCONTINUITY
// (RFC 8216 §4.3.2.3: the tag MUST be there where the timestamps'
// sequence changes), and nowhere else; the segment tagged starts with the
// second part's bytes; ffmpeg plays every frame of both parts through it.
// (The join fell inside a segment, untagged: a strict player took the
// second part's times for a jump back.)
func TestHLSDiscontinuityAtASplice(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	o := newFakeOrigin(t)
	part := o.titles["short-001"]
	spliced := append(bytes.Clone(part), part...)
	o.titles["spliced-003"] = spliced
	x, err := tsindex.BuildFrom(bytes.NewReader(spliced))
	if err != nil {
		t.Fatal(err)
	}
	if len(x.PTSJumps) != 1 {
		t.Fatalf("the index of two parts joined: %d PTS jumps, want 1", len(x.PTSJumps))
	}
	join := x.PTSJumps[0].Offset
	if join < int64(len(part)) || join > int64(len(part))+16*tsindex.PacketSize {
		t.Fatalf("the PTS jump at byte %d, the second part starts at %d", join, len(part))
	}
	// the cuts: one segment tagged, starting at the join's keyframe
	var tagged []int
	segs := segments(x, true)
	for i, s := range segs {
		if s.discontinuity {
			tagged = append(tagged, i)
			if s.start != join {
				t.Errorf("segment %d tagged, from byte %d; the join's keyframe is at %d", i, s.start, join)
			}
		}
	}
	if len(tagged) != 1 {
		t.Fatalf("segments tagged as discontinuous: %v, want the one at the join", tagged)
	}
	// the playlist served
	n := startNode(t, startOrigin(t, o), withHTTP)
	if err := n.store.Prefetch(n.ctx, "spliced-003"); err != nil {
		t.Fatal(err)
	}
	waitComplete(t, n, "spliced-003")
	tok := mint(t, "hls-splice", "spliced-003", "node-1", "", time.Minute)
	url := httpURL(n, tok, "spliced-003/index.m3u8")
	res, b := get(t, url)
	if res.StatusCode != 200 {
		t.Fatalf("playlist: %d %s", res.StatusCode, b)
	}
	pl := string(b)
	if c := strings.Count(pl, "#EXT-X-DISCONTINUITY\n"); c != 1 {
		t.Fatalf("playlist with %d EXT-X-DISCONTINUITY, want 1:\n%s", c, pl)
	}
	want := fmt.Sprintf("#EXT-X-DISCONTINUITY\n#EXTINF:%.3f,\nseg-%d.ts", segs[tagged[0]].dur, tagged[0])
	if !strings.Contains(pl, want) {
		t.Fatalf("playlist without %q:\n%s", want, pl)
	}
	// the segment tagged: the second part's bytes from its keyframe (its
	// own PAT and PMT before it, when there are)
	_, seg := get(t, httpURL(n, tok, fmt.Sprintf("spliced-003/seg-%d.ts", tagged[0])))
	if rest := spliced[join:segs[tagged[0]].end]; len(seg) < len(rest) || !bytes.Equal(seg[len(seg)-len(rest):], rest) {
		t.Fatalf("segment %d: %d bytes, not the %d from the join's keyframe on", tagged[0], len(seg), len(rest))
	}
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	if got, want := decodedFrames(t, "0:v", "-i", url), 2*bytesFrames(t, "0:v", part); got != want {
		t.Errorf("ffmpeg over HLS: %d video frames of the spliced title's %d", got, want)
	}
}
