package vodnode

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/headers"
	"github.com/pion/rtp"

	"vodcluster/cdp/tsindex"
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

// tsPacket is what the tests read from one MPEG-TS packet.
type tsPacket struct {
	pid  uint16
	pusi bool  // payload unit start
	rai  bool  // random access indicator
	pcr  int64 // 27 MHz, -1 when none
	pts  int64 // 90 kHz of a PES starting here, -1 when none
}

// parseTS reads the 188-byte packets of an RTP payload.
func parseTS(b []byte) []tsPacket {
	var out []tsPacket
	for ; len(b) >= 188 && b[0] == 0x47; b = b[188:] {
		p := tsPacket{pid: uint16(b[1]&0x1f)<<8 | uint16(b[2]), pusi: b[1]&0x40 != 0, pcr: -1, pts: -1}
		payload := b[4:188]
		if b[3]&0x20 != 0 { // adaptation field
			n := int(b[4])
			if n > 0 {
				flags := b[5]
				p.rai = flags&0x40 != 0
				if flags&0x10 != 0 && n >= 7 {
					base := int64(b[6])<<25 | int64(b[7])<<17 | int64(b[8])<<9 | int64(b[9])<<1 | int64(b[10])>>7
					ext := int64(b[10]&1)<<8 | int64(b[11])
					p.pcr = base*300 + ext
				}
			}
			payload = b[min(5+n, 188):188]
		}
		if p.pusi && b[3]&0x10 != 0 && len(payload) >= 14 && bytes.HasPrefix(payload, []byte{0, 0, 1}) && payload[7]&0x80 != 0 {
			q := payload[9:14]
			p.pts = int64(q[0]>>1&7)<<30 | int64(q[1])<<22 | int64(q[2]>>1)<<15 | int64(q[3])<<7 | int64(q[4]>>1)
		}
		out = append(out, p)
	}
	return out
}

// media is one RTP packet received, with its arrival time and TS packets.
type media struct {
	at  time.Time
	seq uint16
	ts  []tsPacket
}

// readMedia reads interleaved RTP (channel 0) for d.
func (tc *testClient) readMedia(d time.Duration) []media {
	tc.t.Helper()
	var out []media
	tc.readRTP(d, func(p rtp.Packet) {
		out = append(out, media{at: time.Now(), seq: p.SequenceNumber, ts: parseTS(p.Payload)})
	})
	return out
}

// readMediaUntil reads interleaved RTP (channel 0) until done holds of
// what was read or limit passes (a loaded machine may be seconds late:
// the wait ends as soon as done holds).
func (tc *testClient) readMediaUntil(limit time.Duration, done func([]media) bool) []media {
	tc.t.Helper()
	var out []media
	for end := time.Now().Add(limit); !done(out) && time.Now().Before(end); {
		out = append(out, tc.readMedia(50*time.Millisecond)...)
	}
	return out
}

// readRTP reads interleaved RTP (channel 0) for d, giving each packet to
// each as it comes.
func (tc *testClient) readRTP(d time.Duration, each func(rtp.Packet)) {
	tc.t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		tc.c.SetReadDeadline(end)
		if _, err := tc.br.Peek(1); err != nil {
			break
		}
		// A frame has begun: it is read whole, past the end if need be
		// (a deadline in its middle would leave the rest of it to be read
		// as the next response).
		tc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		ch, b, err := tc.frame()
		if err != nil {
			tc.t.Fatalf("interleaved frame: %v", err)
		}
		if ch != 0 {
			continue
		}
		var p rtp.Packet
		if err := p.Unmarshal(b); err != nil {
			tc.t.Fatal(err)
		}
		each(p)
	}
}

// TestPauseResumeSeekScale drives the VCR commands with a scripted client
// and checks them on the stream itself: no media while paused; after the
// resume the sequence numbers and the PCR go on from where they stopped;
// Range npt=0- and npt=0.000- both start at 0; a seek lands on the
// keyframe before the asked time (its PTS is the first video PES sent);
// a start past the end is 457; Scale ±2, ±4, ±8 is echoed and sends
// keyframe pictures only, forward or backward, the media time advancing
// at Scale times the wall time; Scale 1 plays normally again.
func TestPauseResumeSeekScale(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	idx, err := tsindex.BuildFrom(bytes.NewReader(o.titles["sample-001"]))
	if err != nil {
		t.Fatal(err)
	}
	// npt of a PCR, roughly: the stream clock from its value at byte 0,
	// less the mux's decoder delay (about 0.2 s in the samples)
	clock0, _ := idx.ClockAt(0)
	npt := func(pcr int64) float64 { return float64(pcr-clock0)/tsindex.PCRHz - 0.2 }
	waitPrefetch(t, n, "sample-001")
	url := nodeURL(n, mint(t, "vcr", "sample-001", "node-1", "", time.Minute), "sample-001")
	c := dialRTSP(t, n)
	id := c.play(url) // Range npt=0.000-
	lastPCR := func(ms []media) int64 {
		v := int64(-1)
		for _, m := range ms {
			for _, p := range m.ts {
				if p.pid == idx.PCRPID && p.pcr >= 0 {
					v = p.pcr
				}
			}
		}
		return v
	}

	// the last PCR the client read, also in the media read with the
	// PAUSE's answer (a loaded node may take a while to pause)
	read := int64(-1)
	c.onFrame = func(ch int, b []byte) {
		var p rtp.Packet
		if ch != 0 || p.Unmarshal(b) != nil {
			return
		}
		if v := lastPCR([]media{{ts: parseTS(p.Payload)}}); v >= 0 {
			read = v
		}
	}
	// a second of play from its first packet
	played := c.readMediaUntil(10*time.Second, func(ms []media) bool { return len(ms) > 0 && time.Since(ms[0].at) >= time.Second })
	if lastPCR(played) < 0 {
		t.Fatalf("no PCR in %d RTP packets", len(played))
	}
	res := c.do("PAUSE", url+"/", "Session", id)
	if res.StatusCode != 200 {
		t.Fatalf("PAUSE: %s", statusLine(res))
	}
	// what was on the wire before the PAUSE answer was read with it; from
	// now on nothing flows
	if got := c.readMedia(800 * time.Millisecond); len(got) != 0 {
		t.Fatalf("%d RTP packets while paused", len(got))
	}
	before := read
	lastSeq := c.lastSeq
	res = c.do("PLAY", url+"/", "Session", id)
	if res.StatusCode != 200 {
		t.Fatalf("resume: %s", statusLine(res))
	}
	if seq := rtpInfoSeq(t, res.Header["RTP-Info"]); seq != lastSeq+1 {
		t.Errorf("resumed at seq %d, last packet %d", seq, lastSeq)
	}
	resumed := c.readMediaUntil(10*time.Second, func(ms []media) bool { return lastPCR(ms) >= 0 })
	if len(resumed) == 0 {
		t.Fatal("no media after resume")
	}
	if resumed[0].seq != lastSeq+1 {
		t.Errorf("first packet after resume: seq %d, want %d", resumed[0].seq, lastSeq+1)
	}
	var after int64 = -1
	for _, m := range resumed {
		for _, p := range m.ts {
			if p.pid == idx.PCRPID && p.pcr >= 0 && after < 0 {
				after = p.pcr
			}
		}
	}
	if gap := float64(after-before) / tsindex.PCRHz; before < 0 || after < 0 || gap <= 0 || gap > 0.2 {
		t.Errorf("PCR before the pause %d, after the resume %d: a gap of %.3f s of media", before, after, gap)
	}
	if pos, was := rangeStart(t, res.Header["Range"]), npt(before); math.Abs(pos-was) > 0.3 {
		t.Errorf("resumed at npt %.3f, the last PCR before the pause was at %.3f s", pos, was)
	}

	// seek: to the keyframe presented at or before 10.5 s (its PTS from the
	// first picture), whose picture comes first
	want := idx.KeyframeAt(10.5)
	res = c.do("PLAY", url+"/", "Session", id, "Range", "npt=10.5-")
	if res.StatusCode != 200 {
		t.Fatalf("seek: %s", statusLine(res))
	}
	if pos, kf := rangeStart(t, res.Header["Range"]), idx.KeyframeSeconds(want); math.Abs(pos-kf) > 0.002 || kf != 10 {
		t.Errorf("seek to 10.5 s: Range npt %.3f, the keyframe before is at %.3f", pos, kf)
	}
	firstVideoPTS := func(ms []media) int64 {
		for _, m := range ms {
			for _, p := range m.ts {
				if p.pid == idx.VideoPID && p.pts >= 0 {
					return p.pts
				}
			}
		}
		return -1
	}
	firstPTS := firstVideoPTS(c.readMediaUntil(10*time.Second, func(ms []media) bool { return firstVideoPTS(ms) >= 0 }))
	if wantPTS := idx.Keyframes[want].PTS % (1 << 33); firstPTS != wantPTS {
		t.Errorf("first picture after the seek has PTS %d, the keyframe before 10.5 s %d", firstPTS, wantPTS)
	}
	for _, r := range []string{"npt=0-", "npt=0.000-"} {
		res = c.do("PLAY", url+"/", "Session", id, "Range", r)
		if res.StatusCode != 200 || rangeStart(t, res.Header["Range"]) != 0 {
			t.Errorf("Range %s: %s %v", r, statusLine(res), res.Header["Range"])
		}
	}
	for _, r := range []string{"npt=25-", "npt=20.5-"} {
		if res := c.do("PLAY", url+"/", "Session", id, "Range", r); res.StatusCode != 457 {
			t.Errorf("Range %s past the end: %s", r, statusLine(res))
		}
	}

	// trick play
	for _, tc := range []struct {
		scale float64
		from  string
	}{{2, "2"}, {4, "2"}, {8, "2"}, {-2, "18"}, {-4, "18"}, {-8, "18"}} {
		res = c.do("PLAY", url+"/", "Session", id, "Range", "npt="+tc.from+"-", "Scale", strconv.FormatFloat(tc.scale, 'f', -1, 64))
		if want := strconv.FormatFloat(tc.scale, 'f', 3, 64); res.StatusCode != 200 || len(res.Header["Scale"]) != 1 || res.Header["Scale"][0] != want {
			t.Fatalf("Scale %v: %s, Scale %v, want %s", tc.scale, statusLine(res), res.Header["Scale"], want)
		}
		type pic struct {
			at  time.Time
			pts int64
		}
		// at least three pictures over 1.2 s from the first (a loaded
		// machine may be slow to send it)
		pictures := func(ms []media) []pic {
			var out []pic
			for _, m := range ms {
				for _, p := range m.ts {
					if p.pid == idx.VideoPID && p.pts >= 0 {
						out = append(out, pic{m.at, p.pts})
					}
				}
			}
			return out
		}
		var pics []pic
		for _, m := range c.readMediaUntil(10*time.Second, func(ms []media) bool {
			p := pictures(ms)
			return len(p) >= 3 && time.Since(p[0].at) >= 1200*time.Millisecond
		}) {
			for _, p := range m.ts {
				switch {
				case p.pid != idx.VideoPID && p.pid != 0 && p.pid != idx.PMTPID:
					t.Fatalf("Scale %v: a packet of PID %#x (only pictures and tables are sent)", tc.scale, p.pid)
				case p.pid == idx.VideoPID && p.pts >= 0:
					if !isKeyframePTS(idx, p.pts) {
						t.Fatalf("Scale %v: picture with PTS %d is not a keyframe", tc.scale, p.pts)
					}
					pics = append(pics, pic{m.at, p.pts})
				}
			}
		}
		if len(pics) < 3 {
			t.Fatalf("Scale %v: %d pictures in 10 s", tc.scale, len(pics))
		}
		first, last := pics[0], pics[len(pics)-1]
		speed := float64(last.pts-first.pts) / tsindex.PTSHz / last.at.Sub(first.at).Seconds()
		t.Logf("Scale %v: %d keyframes, media at %.2f x wall time", tc.scale, len(pics), speed)
		if speed/tc.scale < 0.75 || speed/tc.scale > 1.33 {
			t.Errorf("Scale %v: media advanced at %.2f x wall time", tc.scale, speed)
		}
	}
	res = c.do("PLAY", url+"/", "Session", id, "Range", "npt=5-", "Scale", "1")
	if res.StatusCode != 200 || res.Header["Scale"][0] != "1.000" {
		t.Fatalf("Scale 1: %s %v", statusLine(res), res.Header["Scale"])
	}
	hasAudio := func(ms []media) bool {
		for _, m := range ms {
			for _, p := range m.ts {
				if p.pid != idx.VideoPID && p.pid != idx.PMTPID && p.pid != 0 {
					return true
				}
			}
		}
		return false
	}
	audio := hasAudio(c.readMediaUntil(10*time.Second, hasAudio))
	if !audio {
		t.Error("normal play after trick play sends no audio")
	}
	if res := c.do("PLAY", url+"/", "Session", id, "Scale", "abc"); res.StatusCode != 400 {
		t.Errorf("bad Scale: %s", statusLine(res))
	}
	if res := c.do("TEARDOWN", url+"/", "Session", id); res.StatusCode != 200 {
		t.Errorf("TEARDOWN: %s", statusLine(res))
	}
	waitFor(t, 2*time.Second, "session gone", func() bool { return n.Stats().Sessions == 0 })
}

// isKeyframePTS reports whether pts (33 bits) is a keyframe's of idx.
func isKeyframePTS(idx *tsindex.Index, pts int64) bool {
	for _, k := range idx.Keyframes {
		if k.PTS%(1<<33) == pts {
			return true
		}
	}
	return false
}

// waitPrefetch has the node fetch title completely before the test plays it.
func waitPrefetch(t *testing.T, n *Node, title string) {
	t.Helper()
	if err := n.store.Prefetch(n.ctx, title); err != nil {
		t.Fatal(err)
	}
	waitComplete(t, n, title)
}

// TestSeekToTheAdvertisedEnd: a PLAY from just before the duration the
// SDP advertised plays (from the last keyframe) instead of 457; from the
// duration on, 457.
func TestSeekToTheAdvertisedEnd(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	c := dialRTSP(t, n)
	url := nodeURL(n, mint(t, "seek-end", "sample-001", "node-1", "", time.Minute), "sample-001")
	res := c.do("DESCRIBE", url)
	_, after, ok := strings.Cut(string(res.Body), "a=range:npt=0-")
	dur, err := strconv.ParseFloat(strings.TrimSpace(strings.SplitN(after, "\n", 2)[0]), 64)
	if res.StatusCode != 200 || !ok || err != nil {
		t.Fatalf("DESCRIBE: %s, a=range %q", statusLine(res), after)
	}
	id := c.play(url)
	waitComplete(t, n, "sample-001")
	res = c.do("PLAY", url+"/", "Session", id, "Range", fmt.Sprintf("npt=%.3f-", dur-0.05))
	if res.StatusCode != 200 {
		t.Fatalf("PLAY from %.3f s, the SDP's duration %.3f s: %s", dur-0.05, dur, statusLine(res))
	}
	if res := c.do("PLAY", url+"/", "Session", id, "Range", fmt.Sprintf("npt=%.3f-", dur+0.002)); res.StatusCode != 457 {
		t.Fatalf("PLAY from the SDP's duration: %s, want 457", statusLine(res))
	}
}

// TestESSeekToTheAdvertisedEnd: TestSeekToTheAdvertisedEnd for an
// elementary-stream session.
func TestESSeekToTheAdvertisedEnd(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	c := dialRTSP(t, n)
	url := esURL(n, mint(t, "es-seek-end", "sample-001", "node-1", "", time.Minute), "sample-001")
	res := c.do("DESCRIBE", url)
	_, after, ok := strings.Cut(string(res.Body), "a=range:npt=0-")
	dur, err := strconv.ParseFloat(strings.TrimSpace(strings.SplitN(after, "\n", 2)[0]), 64)
	if res.StatusCode != 200 || !ok || err != nil {
		t.Fatalf("DESCRIBE: %s, a=range %q", statusLine(res), after)
	}
	res = c.do("SETUP", url+"/trackID=1", "Transport", "RTP/AVP/TCP;unicast")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	id := sessionID(res)
	waitComplete(t, n, "sample-001")
	if res := c.do("PLAY", url+"/", "Session", id, "Range", fmt.Sprintf("npt=%.3f-", dur-0.05)); res.StatusCode != 200 {
		t.Fatalf("PLAY from %.3f s, the SDP's duration %.3f s: %s", dur-0.05, dur, statusLine(res))
	}
	if res := c.do("PLAY", url+"/", "Session", id, "Range", fmt.Sprintf("npt=%.3f-", dur+0.002)); res.StatusCode != 457 {
		t.Fatalf("PLAY from the SDP's duration: %s, want 457", statusLine(res))
	}
}

// TestPlayRangeEnd: a PLAY with an end (Range: npt=2-4) is answered with
// that range and pauses there (RFC 2326 12.29): the last PCR sent is at
// about 4 s and nothing more comes; a PLAY without Range goes on from
// there to the end of the title.
func TestPlayRangeEnd(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	idx, err := tsindex.BuildFrom(bytes.NewReader(o.titles["sample-001"]))
	if err != nil {
		t.Fatal(err)
	}
	clock0, _ := idx.ClockAt(0)
	waitPrefetch(t, n, "sample-001")
	url := nodeURL(n, mint(t, "range-end", "sample-001", "node-1", "", time.Minute), "sample-001")
	c := dialRTSP(t, n)
	res := c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast")
	id := sessionID(res)
	res = c.do("PLAY", url+"/", "Session", id, "Range", "npt=2-4")
	if res.StatusCode != 200 || len(res.Header["Range"]) != 1 || !strings.HasSuffix(res.Header["Range"][0], "-4.000") {
		t.Fatalf("PLAY npt=2-4: %s %v", statusLine(res), res.Header["Range"])
	}
	last := int64(-1)
	for _, m := range c.readMedia(5 * time.Second) { // the 2 s to play, then silence
		for _, p := range m.ts {
			if p.pid == idx.PCRPID && p.pcr >= 0 {
				last = p.pcr
			}
		}
	}
	if at := float64(last-clock0) / tsindex.PCRHz; last < 0 || at < 3.5 || at > 4.5 {
		t.Fatalf("last PCR at %.2f s of the stream clock, want about 4 (the Range's end)", at)
	}
	if res := c.do("PLAY", url+"/", "Session", id); res.StatusCode != 200 || !strings.HasSuffix(res.Header["Range"][0], "-") {
		t.Fatalf("PLAY on: %s %v", statusLine(res), res.Header["Range"])
	}
	if ms := c.readMediaUntil(10*time.Second, func(ms []media) bool { return len(ms) > 0 }); len(ms) == 0 {
		t.Fatal("no media after a PLAY without Range")
	}
}

// TestESPlayRangeEnd: in elementary-stream mode too a PLAY with an end
// (Range: npt=2-4.5, inside a GOP) is answered with that range and pauses
// there: the last picture sent is about 4.5 s into the title and nothing
// more comes; a PLAY
// without Range goes on from the next picture, its RTP-Info continuing
// the sequence and its timestamps the pictures'. (Elementary-stream
// sessions played on to the end of the title; then went on from the next
// keyframe, up to a second later.)
func TestESPlayRangeEnd(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	waitPrefetch(t, n, "sample-001")
	url := esURL(n, mint(t, "es-range-end", "sample-001", "node-1", "", time.Minute), "sample-001")
	c := dialRTSP(t, n)
	res := c.do("SETUP", url+"/trackID=1", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	id := sessionID(res)
	res = c.do("PLAY", url+"/", "Session", id, "Range", "npt=2-4.5")
	if res.StatusCode != 200 || len(res.Header["Range"]) != 1 || !strings.HasSuffix(res.Header["Range"][0], "-4.500") {
		t.Fatalf("PLAY npt=2-4.5: %s %v", statusLine(res), res.Header["Range"])
	}
	var ri headers.RTPInfo
	if err := ri.Unmarshal(res.Header["RTP-Info"]); err != nil || len(ri) == 0 || ri[0].Timestamp == nil {
		t.Fatalf("RTP-Info %v: %v", res.Header["RTP-Info"], err)
	}
	start, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(res.Header["Range"][0], "npt="), "-4.500"), 64)
	if err != nil {
		t.Fatal(err)
	}
	ms := c.readMediaRTP(5 * time.Second) // the 2.5 s to play, then silence
	if len(ms) < 20 {
		t.Fatalf("%d video packets", len(ms))
	}
	last := ms[len(ms)-1]
	at := start + float64(last.Timestamp-*ri[0].Timestamp)/90000
	t.Logf("played from %.2f s to a picture at %.2f s", start, at)
	if at < 3.8 || at > 5.4 {
		t.Fatalf("last picture at %.2f s (from %.2f s), want about 4.5 (the Range's end)", at, start)
	}
	res = c.do("PLAY", url+"/", "Session", id)
	if res.StatusCode != 200 || !strings.HasSuffix(res.Header["Range"][0], "-") {
		t.Fatalf("PLAY on: %s %v", statusLine(res), res.Header["Range"])
	}
	ri = nil
	if err := ri.Unmarshal(res.Header["RTP-Info"]); err != nil || len(ri) == 0 || ri[0].SequenceNumber == nil || ri[0].Timestamp == nil {
		t.Fatalf("RTP-Info %v: %v", res.Header["RTP-Info"], err)
	}
	if *ri[0].SequenceNumber != last.SequenceNumber+1 {
		t.Errorf("PLAY on: RTP-Info seq %d after the last packet's %d", *ri[0].SequenceNumber, last.SequenceNumber)
	}
	// A second of the play on from its first packet (a loaded machine
	// may be slow to go on: up to 10 s).
	var after []rtp.Packet
	var came time.Time
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && (came.IsZero() || time.Since(came) < time.Second); {
		got := c.readMediaRTP(250 * time.Millisecond)
		if len(got) > 0 && came.IsZero() {
			came = time.Now()
		}
		after = append(after, got...)
	}
	if len(after) == 0 {
		t.Fatal("no media after a PLAY without Range")
	}
	if after[0].SequenceNumber != last.SequenceNumber+1 {
		t.Errorf("first packet after the PLAY numbered %d after %d", after[0].SequenceNumber, last.SequenceNumber)
	}
	hi := last.Timestamp // the pictures' timestamps (PTS) go on from the latest sent
	for _, p := range ms {
		if int32(p.Timestamp-hi) > 0 {
			hi = p.Timestamp
		}
	}
	lo := after[0].Timestamp
	for _, p := range after {
		if int32(p.Timestamp-lo) < 0 {
			lo = p.Timestamp
		}
	}
	if d := float64(int32(lo-hi)) / 90000; d > 0.25 || d < -0.25 {
		t.Errorf("the pictures after the PLAY start %.3f s after the last before it, want the next", d)
	}
}

// readMediaRTP reads the RTP packets of interleaved channel 0 for d.
func (tc *testClient) readMediaRTP(d time.Duration) []rtp.Packet {
	tc.t.Helper()
	var out []rtp.Packet
	tc.readRTP(d, func(p rtp.Packet) { out = append(out, p) })
	return out
}
