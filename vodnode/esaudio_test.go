package vodnode

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/headers"
	"github.com/pion/rtp"
)

// TestESAudioOnlyRange: an elementary-stream session of a title with no
// video (AAC alone) seeks and stops where its Range says, npt counting the
// title's clock from its start as its duration does (there is no first
// picture to count from): PLAY npt=5-8 is answered from 5 s with the RTP
// time of that start, the audio sent runs from the frame presented at 5 s
// to just before 8 s (RTP times against RTP-Info's) and then stops, the
// position held at 8 s; a PLAY without Range goes on from there. ffmpeg
// seeking it (-ss 10 -t 2) is sent audio from 10 s on at once and decodes
// 2 s of it. (npt counted from the first picture only: such a title was
// played from its start whatever the Range, and to its end, the position
// never moving from the start.)
func TestESAudioOnlyRange(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	o := newFakeOrigin(t)
	const title = "audio-001"
	o.titles[title] = audioOnly(t, o.titles["sample-001"])
	n := startNode(t, startOrigin(t, o))
	waitPrefetch(t, n, title)

	url := esURL(n, mint(t, "es-audio-range", title, "node-1", "", time.Minute), title)
	c := dialRTSP(t, n)
	res := c.do("DESCRIBE", url)
	if res.StatusCode != 200 || strings.Contains(string(res.Body), "m=video") || !strings.Contains(string(res.Body), "m=audio") {
		t.Fatalf("DESCRIBE: %s\n%s", statusLine(res), res.Body)
	}
	res = c.do("SETUP", url+"/trackID=2", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP audio: %s", statusLine(res))
	}
	id := sessionID(res)
	res = c.do("PLAY", url+"/", "Session", id, "Range", "npt=5-8")
	if res.StatusCode != 200 || len(res.Header["Range"]) != 1 || !strings.HasSuffix(res.Header["Range"][0], "-8.000") {
		t.Fatalf("PLAY npt=5-8: %s %v", statusLine(res), res.Header["Range"])
	}
	start, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(res.Header["Range"][0], "npt="), "-8.000"), 64)
	if err != nil || start != 5 {
		t.Fatalf("PLAY npt=5-8 answered Range %v, want from 5 s", res.Header["Range"])
	}
	var ri headers.RTPInfo
	if err := ri.Unmarshal(res.Header["RTP-Info"]); err != nil || len(ri) != 1 || ri[0].Timestamp == nil {
		t.Fatalf("RTP-Info %v: %v", res.Header["RTP-Info"], err)
	}
	const rate = 48000.0
	at := func(p rtp.Packet) float64 { return start + float64(int32(p.Timestamp-*ri[0].Timestamp))/rate }
	// The 3 s to play: read until the packet after the last one read
	// would begin at or past the Range's end (the packets follow each
	// other by the frames each carries, their smallest spacing taken)
	// and nothing came for a second from then (up to 15 s in all on a
	// loaded machine). A second of silence alone is not the end: a
	// sender stalled that long on a loaded machine made it mid-play.
	var ps []rtp.Packet
	step := math.Inf(1) // the smallest spacing of the packets read, seconds
	reached := func() bool {
		return len(ps) >= 2 && at(ps[len(ps)-1])+step >= 8-0.001
	}
	for end, last := time.Now().Add(15*time.Second), time.Now(); !reached() || time.Since(last) < time.Second; {
		if time.Now().After(end) {
			if len(ps) == 0 {
				t.Fatal("no audio in 15 s")
			}
			t.Fatalf("%d audio packets in 15 s, still coming, or stopped short of the Range's end (the last at %.3f s)", len(ps), at(ps[len(ps)-1]))
		}
		got := c.readMediaRTP(250 * time.Millisecond)
		if len(got) > 0 {
			last = time.Now()
		}
		for _, p := range got {
			if len(ps) > 0 {
				if d := at(p) - at(ps[len(ps)-1]); d > 0 {
					step = min(step, d)
				}
			}
			ps = append(ps, p)
		}
	}
	if len(ps) < 8 { // 3 s of audio, a PES (about 0.2 s) per packet
		t.Fatalf("%d audio packets", len(ps))
	}
	first, last := at(ps[0]), at(ps[len(ps)-1])
	t.Logf("audio from %.3f s to %.3f s (Range 5-8)", first, last)
	// The first packet sent carries the frame presented at the start (it
	// begins before it by at most the frames one packet carries); the
	// last sent begins before the end, within them too.
	if first > start || first < start-0.3 {
		t.Errorf("the first audio is at %.3f s, the play answered from %.3f s", first, start)
	}
	if last > 8 || last < 7.6 {
		t.Errorf("the last audio sent is at %.3f s, want just before the Range's end, 8 s", last)
	}
	res = c.doBody("GET_PARAMETER", url+"/", "position\r\n", "Session", id)
	pos, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(string(res.Body), "position:")), 64)
	if res.StatusCode != 200 || err != nil || math.Abs(pos-8) > 0.05 {
		t.Errorf("position held at the Range's end: %s %q, want 8.000", statusLine(res), res.Body)
	}
	res = c.do("PLAY", url+"/", "Session", id)
	if res.StatusCode != 200 {
		t.Fatalf("PLAY on: %s", statusLine(res))
	}
	var after []rtp.Packet
	for end := time.Now().Add(10 * time.Second); len(after) == 0 && time.Now().Before(end); {
		after = append(after, c.readMediaRTP(250*time.Millisecond)...)
	}
	if len(after) == 0 || after[0].SequenceNumber != ps[len(ps)-1].SequenceNumber+1 {
		t.Fatalf("PLAY on: %d packets, the first not the next after the Range's end", len(after))
	}
	if d := at(after[0]) - last; d <= 0 || d > 0.3 {
		t.Errorf("PLAY on: the audio goes on %.3f s after the last before it, want the next packet", d)
	}

	// ffmpeg asks Range npt=10- (its -ss, plus the input's start time:
	// 0 here) and is sent audio from there at once: 2 s of it in about
	// 2 s, not after the 10 s it took from the title's start.
	began := time.Now()
	frames := decodedFrames(t, "0:a", "-rtsp_transport", "tcp", "-ss", "10", "-i", esURL(n, mint(t, "es-audio-ss", title, "node-1", "", time.Minute), title), "-t", "2")
	took := time.Since(began)
	t.Logf("ffmpeg -ss 10 -t 2: %d audio frames in %v", frames, took)
	if frames < 80 || frames > 100 {
		t.Errorf("ffmpeg -ss 10 -t 2 decoded %d audio frames, want 2 s of them (94)", frames)
	}
	// A play from the title's start would take 12 s and more (10 s to
	// reach 10 s); ffmpeg's start and probe may take seconds on a loaded
	// machine.
	if took > 10*time.Second {
		t.Errorf("ffmpeg -ss 10 -t 2 took %v: the play did not start at 10 s", took)
	}
}
