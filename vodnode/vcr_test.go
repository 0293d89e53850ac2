package vodnode

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtp"
)

// rtpInfoSeq returns the seq of an RTP-Info header value.
func rtpInfoSeq(t *testing.T, v []string) uint16 {
	t.Helper()
	if len(v) == 0 {
		t.Fatal("no RTP-Info")
	}
	for _, kv := range strings.Split(v[0], ";") {
		if s, ok := strings.CutPrefix(kv, "seq="); ok {
			n, _ := strconv.Atoi(s)
			return uint16(n)
		}
	}
	t.Fatalf("no seq in %q", v[0])
	return 0
}

// rangeStart returns the start of an npt Range header value.
func rangeStart(t *testing.T, v []string) float64 {
	t.Helper()
	if len(v) == 0 {
		t.Fatal("no Range")
	}
	s, _, _ := strings.Cut(strings.TrimPrefix(v[0], "npt="), "-")
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("Range %q", v[0])
	}
	return f
}

// TestPauseResumeSeekScale drives the VCR commands with a scripted client.
func TestPauseResumeSeekScale(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	url := nodeURL(n, mint(t, "vcr", "sample-001", "node-1", "", time.Minute), "sample-001")
	c := dialRTSP(t, n)
	id := c.play(url)

	var last rtp.Packet
	readFor := func(d time.Duration) int {
		count := 0
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			c.c.SetReadDeadline(end)
			ch, b, err := c.frame()
			if err != nil {
				break
			}
			if ch == 0 {
				if err := last.Unmarshal(b); err != nil {
					t.Fatal(err)
				}
				count++
			}
		}
		return count
	}
	if readFor(time.Second) == 0 {
		t.Fatal("no media")
	}
	res := c.do("PAUSE", url+"/", "Session", id)
	if res.StatusCode != 200 {
		t.Fatalf("PAUSE: %s", statusLine(res))
	}
	readFor(200 * time.Millisecond) // what was in flight
	if got := readFor(700 * time.Millisecond); got != 0 {
		t.Fatalf("%d packets while paused", got)
	}
	// resume: the sequence goes on from the last packet, at the paused position
	res = c.do("PLAY", url+"/", "Session", id)
	if res.StatusCode != 200 {
		t.Fatalf("resume: %s", statusLine(res))
	}
	if seq := rtpInfoSeq(t, res.Header["RTP-Info"]); seq != c.lastSeq+1 {
		t.Errorf("resumed at seq %d, last packet %d", seq, c.lastSeq)
	}
	if pos := rangeStart(t, res.Header["Range"]); pos < 0.8 || pos > 1.6 {
		t.Errorf("resumed at npt %.3f after about 1 s of play", pos)
	}
	if readFor(300*time.Millisecond) == 0 {
		t.Fatal("no media after resume")
	}
	// seek to the keyframe before 10.5 s
	res = c.do("PLAY", url+"/", "Session", id, "Range", "npt=10.5-")
	if res.StatusCode != 200 {
		t.Fatalf("seek: %s", statusLine(res))
	}
	if pos := rangeStart(t, res.Header["Range"]); pos < 9.4 || pos > 10.5 {
		t.Errorf("seek to 10.5 s landed at %.3f", pos)
	}
	if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=25-"); res.StatusCode != 457 {
		t.Errorf("seek past the end: %s", statusLine(res))
	}
	// fast forward at 4x: Scale echoed, keyframes at 4 s of media per second
	res = c.do("PLAY", url+"/", "Session", id, "Scale", "4")
	if res.StatusCode != 200 || res.Header["Scale"][0] != "4.000" {
		t.Fatalf("Scale 4: %s %v", statusLine(res), res.Header["Scale"])
	}
	start := time.Now()
	var first, lastTS uint32
	pics := 0
	for time.Since(start) < 1500*time.Millisecond {
		c.c.SetReadDeadline(start.Add(1500 * time.Millisecond))
		ch, b, err := c.frame()
		if err != nil {
			break
		}
		var p rtp.Packet
		if ch != 0 || p.Unmarshal(b) != nil {
			continue
		}
		if pics == 0 || p.Timestamp != lastTS {
			if pics == 0 {
				first = p.Timestamp
			}
			pics++
			lastTS = p.Timestamp
		}
	}
	speed := float64(lastTS-first) / 90000 / 1.5
	t.Logf("scale 4: %d pictures, %.2f x", pics, speed)
	if pics < 4 || speed < 2.5 || speed > 5.5 {
		t.Errorf("scale 4 gave %d pictures at %.2f x", pics, speed)
	}
	if res := c.do("PLAY", url+"/", "Session", id, "Scale", "abc"); res.StatusCode != 400 {
		t.Errorf("bad Scale: %s", statusLine(res))
	}
	if res := c.do("TEARDOWN", url+"/", "Session", id); res.StatusCode != 200 {
		t.Errorf("TEARDOWN: %s", statusLine(res))
	}
}
