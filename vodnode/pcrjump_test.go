package vodnode

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtp"

	"vodcluster/cdp/tsindex"
)

// TestDamagedPCRPlaysOn: a title whose bytes read, in its middle, as a PCR
// 9.6 hours ahead (damaged on disk or at the origin, no discontinuity
// flagged) plays on at its rate to its end: the index absorbs the leap.
// (The pacer waited for that PCR, its viewers frozen in silence until
// their session timed out.)
func TestDamagedPCRPlaysOn(t *testing.T) {
	o := newFakeOrigin(t)
	d := bytes.Clone(o.titles["short-001"])
	x, err := tsindex.BuildFrom(bytes.NewReader(d))
	if err != nil {
		t.Fatal(err)
	}
	at := x.PCRs[len(x.PCRs)/2].Offset
	base := int64(34632 * 90000)
	d[at+6], d[at+7], d[at+8], d[at+9] = byte(base>>25), byte(base>>17), byte(base>>9), byte(base>>1)
	d[at+10] = byte(base<<7) | 0x7e
	o.titles["damaged-001"] = d
	n := startNode(t, startOrigin(t, o))
	url := nodeURL(n, mint(t, "pcr-leap", "damaged-001", "node-1", "", time.Minute), "damaged-001")
	c := dialRTSP(t, n)
	res := c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	if res := c.do("PLAY", url+"/", "Session", sessionID(res)); res.StatusCode != 200 {
		t.Fatalf("PLAY: %s", statusLine(res))
	}
	// The whole title comes in about its play time; a stream waiting for
	// the PCR would send nothing past the damaged packet for hours.
	c.c.SetReadDeadline(time.Now().Add(shortSeconds*time.Second + 20*time.Second))
	var got int64
	for got < int64(len(d)) {
		ch, b, err := c.frame()
		if err != nil {
			t.Fatalf("after %d of the title's %d bytes (the damaged PCR at %d): %v", got, len(d), at, err)
		}
		if ch == 0 && len(b) > 12 {
			got += int64(len(b) - 12) // RTP header of an MP2T packet, no CSRC or extension
		}
	}
}

// TestSeekPastASplice: on a title made of two encodes joined without
// stamping them again (its PCR and PTS start again at the join), a seek
// past the join lands where the viewer asked, in MP2T and in
// elementary-stream mode: the index absorbs the presentation times' jump
// as it does the clock's. (It landed on the first part's last keyframe,
// the times after the join being taken for earlier ones.) In
// elementary-stream mode the RTP timestamps follow the same timeline as
// RTP-Info's rtptime (they were 6 s, the splice's jump, apart).
func TestSeekPastASplice(t *testing.T) {
	o := newFakeOrigin(t)
	part := o.titles["short-001"]
	o.titles["spliced-001"] = append(bytes.Clone(part), part...)
	o.titles["spliced-002"] = o.titles["spliced-001"]
	n := startNode(t, startOrigin(t, o))
	// Each mode while its title fills (a seek not indexed yet, as a rule),
	// then once the titles are complete.
	for i, c := range []struct {
		title string
		es    bool
	}{{"spliced-001", false}, {"spliced-002", true}, {"spliced-001", true}, {"spliced-002", false}} {
		title, es := c.title, c.es
		if i == 2 {
			waitComplete(t, n, "spliced-001")
			waitComplete(t, n, "spliced-002")
		}
		c := dialRTSP(t, n)
		tok := mint(t, fmt.Sprintf("splice-%d", i), title, "node-1", "", time.Minute)
		url, track := nodeURL(n, tok, title), "/trackID=0"
		if es {
			url, track = esURL(n, tok, title), "/trackID=1"
		}
		res := c.do("SETUP", url+track, "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
		if res.StatusCode != 200 {
			t.Fatalf("es %v: SETUP: %s", es, statusLine(res))
		}
		res = c.do("PLAY", url+"/", "Session", sessionID(res), "Range", fmt.Sprintf("npt=%d-", shortSeconds+2))
		if res.StatusCode != 200 {
			t.Fatalf("es %v: PLAY: %s", es, statusLine(res))
		}
		if s := rangeStart(t, res.Header["Range"]); s < shortSeconds+1.5 || s > shortSeconds+2.05 {
			t.Fatalf("es %v: PLAY npt=%d- answered Range %v, want the keyframe at about %d s", es, shortSeconds+2, res.Header["Range"], shortSeconds+2)
		}
		if !es {
			// The bytes from the keyframe asked for to the end of the
			// title come (the PAT and PMT before them), until the BYE.
			x, err := tsindex.BuildFrom(bytes.NewReader(part))
			if err != nil {
				t.Fatal(err)
			}
			want := int64(len(part)) - x.Keyframes[x.KeyframeAt(2)].Offset // in the second part
			var got int64
			c.c.SetReadDeadline(time.Now().Add(shortSeconds*time.Second + 20*time.Second))
			for {
				ch, b, err := c.frame()
				if err != nil {
					t.Fatalf("MP2T: %d bytes, then: %v", got, err)
				}
				if ch == 1 && hasBye(b) {
					break
				}
				if ch == 0 && len(b) > 12 {
					got += int64(len(b) - 12)
				}
			}
			if got < want || got > want+4*tsindex.PacketSize {
				t.Fatalf("MP2T: %d bytes from the seek to the end, want the %d from the keyframe at %d s", got, want, shortSeconds+2)
			}
			continue
		}
		var rtptime uint32
		for _, kv := range strings.Split(res.Header["RTP-Info"][0], ";") {
			if v, ok := strings.CutPrefix(kv, "rtptime="); ok {
				x, _ := strconv.ParseUint(v, 10, 32)
				rtptime = uint32(x)
			}
		}
		c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			ch, b, err := c.frame()
			if err != nil {
				t.Fatalf("no video: %v", err)
			}
			var pk rtp.Packet
			if ch != 0 || pk.Unmarshal(b) != nil {
				continue
			}
			// RTP-Info gives the rtptime of the npt asked; the first
			// picture is its keyframe, up to a second (the sample's GOP)
			// before it.
			if d := int32(rtptime - pk.Timestamp); d < 0 || d > tsindex.PTSHz {
				t.Fatalf("the first video packet's timestamp %d, RTP-Info's rtptime %d: %.3f s apart, want the keyframe at most 1 s before", pk.Timestamp, rtptime, float64(d)/tsindex.PTSHz)
			}
			break
		}
	}
}

// TestHLSSegmentsOfASplicedTitle: the HLS segments of a title spliced
// without stamping it again keep their length past the join, and their
// durations add up to the title's (the presentation times starting again
// at the join made one segment of everything after it that did not pass
// the last cut's time).
func TestHLSSegmentsOfASplicedTitle(t *testing.T) {
	part := newFakeOrigin(t).titles["sample-001"]
	x, err := tsindex.BuildFrom(bytes.NewReader(append(bytes.Clone(part), part...)))
	if err != nil {
		t.Fatal(err)
	}
	segs := segments(x, true)
	var total float64
	for i, s := range segs {
		if s.dur > hlsTarget+1.5 || s.dur <= 0 {
			t.Fatalf("segment %d of %d: %.3f s, want about %.0f", i, len(segs), s.dur, hlsTarget)
		}
		total += s.dur
	}
	if d := x.Duration(); total < d-0.5 || total > d+0.5 {
		t.Fatalf("segments add up to %.3f s, the title is %.3f", total, d)
	}
}
