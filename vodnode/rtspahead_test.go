package vodnode

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// videoCRCs decodes the video of the MPEG-TS at url (any input ffmpeg
// reads, with args before -i) and returns the CRC of each decoded picture
// (ffmpeg's framecrc), in order.
func videoCRCs(t *testing.T, ctx context.Context, url string, args ...string) []string {
	t.Helper()
	cmd := append([]string{"-nostdin", "-hide_banner", "-loglevel", "error"}, args...)
	cmd = append(cmd, "-i", url, "-map", "0:v", "-f", "framecrc", "-")
	out, err := exec.CommandContext(ctx, "ffmpeg", cmd...).Output()
	if err != nil {
		t.Fatalf("ffmpeg %s: %v (%d bytes of output)", strings.Join(cmd, " "), err, len(out))
	}
	var crcs []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Split(l, ","); len(f) == 6 && !strings.HasPrefix(l, "#") {
			crcs = append(crcs, strings.TrimSpace(f[5]))
		}
	}
	return crcs
}

// An RTSP PLAY whose Range starts far ahead of the title's fill (a
// set-top box resuming a film from its bookmark on a node that does not
// hold it) plays from the origin's bytes at once. Here the fill is held at
// 200 kB (2.6 s of the 20 s title) for the whole test: before, ffmpeg
// -ss 12 waited for the fill to reach 12 s, forever. The pictures ffmpeg
// decodes are the title's from 12 s on (their CRCs are among those of
// the file decoded from 10 s, none among its first 5 s), over TCP and
// UDP, and as elementary streams (/es: before, those waited for the
// fill), and the bytes came from origin reads.
func TestRTSPPlayFarAheadOfTheFillFromTheOrigin(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	o := heldOrigin(t, 200_000)
	const title = "sample-001"
	file := filepath.Join(t.TempDir(), title+".ts")
	if err := os.WriteFile(file, o.titles[title], 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // bounds a play that waits for the held fill
	defer cancel()
	from10 := map[string]bool{}
	for _, c := range videoCRCs(t, ctx, file, "-ss", "10") {
		from10[c] = true
	}
	first5 := map[string]bool{}
	for _, c := range videoCRCs(t, ctx, file, "-t", "5") {
		first5[c] = true
	}
	n := startNode(t, startOrigin(t, o))
	for _, tr := range []string{"tcp", "udp", "es"} {
		tok := mint(t, "rtsp-ahead-"+tr, title, "node-1", "", time.Minute)
		url, transport := nodeURL(n, tok, title), tr
		if tr == "es" { // elementary streams (/es), over TCP
			url, transport = esURL(n, tok, title), "tcp"
		}
		crcs := videoCRCs(t, ctx, url, "-rtsp_transport", transport, "-ss", "12", "-t", "3")
		if ctx.Err() != nil {
			t.Fatalf("over %s: ffmpeg -ss 12 did not end: the play waited for the held fill", tr)
		}
		in10, in5 := 0, 0
		for _, c := range crcs {
			if from10[c] {
				in10++
			}
			if first5[c] {
				in5++
			}
		}
		t.Logf("over %s: %d pictures, %d of the file's from 10 s, %d of its first 5 s", tr, len(crcs), in10, in5)
		if len(crcs) < 30 || in10 < len(crcs)*9/10 || in5 > 0 {
			t.Errorf("over %s: %d pictures decoded, %d of them the file's from 10 s, %d of its first 5 s; want 30 or more, nearly all from 10 s, none of the first 5 s", tr, len(crcs), in10, in5)
		}
	}
	if !stillFilling(n, title) {
		t.Fatal("the title is no longer filling: the test did not play ahead of a fill")
	}
	if got := n.Stats().OriginRangeBytes; got == 0 {
		t.Error("no bytes read from the origin ahead of the fill")
	}
}

// The origin's reads of an RTSP play far ahead of the fill stay a bound
// ahead of the play (here 150 kB, 2 s of the title), each opening where
// the last ended, and end once the fill has caught up with them: the
// play goes on from the fill's bytes with every picture in place. The
// fill is held at 200 kB until the play has started from the origin's
// bytes, then runs at about seven times the title's bitrate: it catches
// up with the reads before they reach the title's end.
func TestRTSPPlayAheadHandsOverToTheFill(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	aheadBounds(t, 150_000)
	o := heldOrigin(t, 200_000)
	const title = "sample-002"
	data := o.titles[title]
	o.rate = int64(len(data)) / 3 // about seven times the title's bitrate
	file := filepath.Join(t.TempDir(), title+".ts")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	from10 := map[string]bool{}
	for _, c := range videoCRCs(t, ctx, file, "-ss", "10") {
		from10[c] = true
	}
	n := startNode(t, startOrigin(t, o))
	go func() {
		// Let the fill go on once the play has the origin's bytes.
		for ctx.Err() == nil && n.Stats().OriginRangeBytes == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond): // polls a counter; no event to await
			}
		}
		o.unhold()
	}()
	url := nodeURL(n, mint(t, "rtsp-ahead-handover", title, "node-1", "", time.Minute), title)
	crcs := videoCRCs(t, ctx, url, "-rtsp_transport", "tcp", "-ss", "12", "-t", "6")
	in10 := 0
	for _, c := range crcs {
		if from10[c] {
			in10++
		}
	}
	lens := o.lengths()
	ranged := n.Stats().OriginRangeBytes
	t.Logf("%d pictures, %d of the file's from 10 s; origin reads of lengths %v, %d bytes; transfers at %v", len(crcs), in10, lens, ranged, o.fetchOffsets(title))
	if len(crcs) < 140 || in10 < len(crcs)*9/10 {
		t.Errorf("%d pictures decoded, %d of them the file's from 10 s; want 140 or more, nearly all from 10 s", len(crcs), in10)
	}
	if len(lens) < 2 {
		t.Errorf("origin reads of lengths %v: want two or more, each bounded", lens)
	}
	if ranged == 0 || ranged >= int64(len(data))-800_000 {
		t.Errorf("%d bytes read from the origin ahead of the fill: want some, and the reads ended before the title's end", ranged)
	}
	if stillFilling(n, title) {
		t.Error("the fill did not complete")
	}
}
