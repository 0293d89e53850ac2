package vodnode

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"vodcluster/cdp/tsindex"
)

// pictures reads the interleaved RTP of tc until done says so of the
// pictures' presentation times seen (seconds from the title's first,
// firstPTS in 90 kHz ticks; of the video PID vpid), an RTCP BYE, or
// limit; it returns them, and whether a BYE came. limit bounds a play
// that sends nothing (the test then fails); it measures nothing.
func pictures(tc *testClient, vpid uint16, firstPTS int64, limit time.Duration, done func([]float64) bool) (pts []float64, bye bool) {
	end := time.Now().Add(limit)
	for time.Now().Before(end) && !done(pts) {
		tc.c.SetReadDeadline(end)
		ch, b, err := tc.frame()
		if err != nil {
			break
		}
		if ch%2 != 0 {
			if bytes.Contains(b, []byte("end of title")) {
				return pts, true
			}
			continue
		}
		for p := b[min(12, len(b)):]; len(p) >= 188; p = p[188:] {
			pk := p[:188]
			if uint16(pk[1]&0x1f)<<8|uint16(pk[2]) != vpid || pk[1]&0x40 == 0 {
				continue
			}
			i := 4
			if pk[3]&0x20 != 0 {
				i += 1 + int(pk[4])
			}
			if i+14 > 188 || pk[i] != 0 || pk[i+1] != 0 || pk[i+2] != 1 || pk[i+7]&0x80 == 0 {
				continue
			}
			h := pk[i+9:]
			v := int64(h[0]>>1&7)<<30 | int64(h[1])<<22 | int64(h[2]>>1)<<15 | int64(h[3])<<7 | int64(h[4]>>1)
			pts = append(pts, float64(v-firstPTS)/90000)
		}
	}
	return pts, false
}

// reach returns a done for pictures: a picture presented at or after t.
func reach(t float64) func([]float64) bool {
	return func(pts []float64) bool { return len(pts) > 0 && pts[len(pts)-1] >= t }
}

// aheadSession sets up an RTSP session over TCP of title on n (whose
// fill is held) and returns its client, URL, session id, and the title's
// video PID and first PTS (from the whole file).
func aheadSession(t *testing.T, n *Node, o *fakeOrigin, title, sid string) (*testClient, string, string, uint16, int64) {
	t.Helper()
	url := nodeURL(n, mint(t, sid, title, "node-1", "", time.Minute), title)
	tc := dialRTSP(t, n)
	res := tc.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %d", res.StatusCode)
	}
	x := indexOf(t, o.titles[title])
	return tc, url, sessionID(res), x.VideoPID, x.FirstPTS
}

// A set-top box sends its PLAY with the bookmark's Range at once after
// SETUP, before the fill has a byte: the play starts from the origin's
// bytes all the same (it waited for the fill: the read far ahead needed
// the fill's first bytes to place its clock, and was not asked again).
// Then a seek a little past the last keyframe read (after a PAUSE) plays
// too: it is read again from the origin (a seek there kept the read,
// which waited for the play to move, and the play for a keyframe after
// its time: silence).
func TestRTSPPlayAheadRightAfterSetupAndSkip(t *testing.T) {
	aheadBounds(t, 50_000) // reads kept close to the play
	o := heldOrigin(t, 200_000)
	n := startNode(t, startOrigin(t, o))
	tc, url, id, vpid, first := aheadSession(t, n, o, "sample-001", "ahead-at-once")
	if res := tc.do("PLAY", url+"/", "Session", id, "Range", "npt=12-"); res.StatusCode != 200 {
		t.Fatalf("PLAY npt=12-: %d", res.StatusCode)
	}
	pts, _ := pictures(tc, vpid, first, 30*time.Second, reach(13))
	if len(pts) == 0 || pts[0] < 5 || pts[len(pts)-1] < 13 {
		t.Fatalf("pictures presented at %v after PLAY npt=12- at once after SETUP, want from the keyframe before 12 s to 13 s", pts)
	}
	if res := tc.do("PAUSE", url+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("PAUSE: %d", res.StatusCode)
	}
	skip := 16.8 // past the last keyframe the reads kept close to the play had (15 s)
	if res := tc.do("PLAY", url+"/", "Session", id, "Range", "npt="+formatNPT(skip)+"-"); res.StatusCode != 200 {
		t.Fatalf("PLAY npt=%v-: %d", skip, res.StatusCode)
	}
	pts, _ = pictures(tc, vpid, first, 30*time.Second, reach(skip+1))
	if i := len(pts) - 1; i < 0 || pts[i] < skip+1 {
		t.Fatalf("pictures presented at %v after the skip to %v s, want past %v s", pts, skip, skip+1)
	}
	if !stillFilling(n, "sample-001") {
		t.Fatal("the title is no longer filling")
	}
}

// Trick play from a position far ahead of the fill waits for the fill
// (it jumped back to the fill's last keyframe and rewound from there),
// and goes on from where it stood once the fill gets there; normal play
// after it far ahead of the fill reads from the origin again (it waited
// for the fill).
func TestRTSPPlayAheadThenTrickPlay(t *testing.T) {
	o := heldOrigin(t, 200_000)
	n := startNode(t, startOrigin(t, o))
	tc, url, id, vpid, first := aheadSession(t, n, o, "sample-001", "ahead-trick")
	waitFor(t, 10*time.Second, "the fill held at 200 kB", func() bool {
		for _, s := range n.Titles() {
			if s.ID == "sample-001" {
				return s.Stored >= 199_000
			}
		}
		return false
	})
	if res := tc.do("PLAY", url+"/", "Session", id, "Range", "npt=12-"); res.StatusCode != 200 {
		t.Fatalf("PLAY npt=12-: %d", res.StatusCode)
	}
	if pts, _ := pictures(tc, vpid, first, 30*time.Second, reach(13)); len(pts) == 0 || pts[len(pts)-1] < 13 {
		t.Fatalf("pictures presented at %v, want to 13 s", pts)
	}
	if res := tc.do("PLAY", url+"/", "Session", id, "Scale", "-2"); res.StatusCode != 200 {
		t.Fatalf("PLAY Scale -2: %d", res.StatusCode)
	}
	if pts, _ := pictures(tc, vpid, first, 2*time.Second, func([]float64) bool { return false }); len(pts) != 0 {
		t.Fatalf("rewinding far ahead of the held fill sent pictures presented at %v, want none until the fill gets there", pts)
	}
	if res := tc.do("PLAY", url+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("PLAY at Scale 1 after the rewind: %d", res.StatusCode)
	}
	pts, _ := pictures(tc, vpid, first, 30*time.Second, reach(15))
	if len(pts) == 0 || pts[0] < 9 || pts[len(pts)-1] < 15 {
		t.Fatalf("normal play after trick play far ahead of the held fill: pictures presented at %v, want from about 13 s to 15 s", pts)
	}
	o.unhold()
	if res := tc.do("PLAY", url+"/", "Session", id, "Scale", "-4"); res.StatusCode != 200 {
		t.Fatalf("PLAY Scale -4: %d", res.StatusCode)
	}
	pts, _ = pictures(tc, vpid, first, 30*time.Second, func(p []float64) bool { return len(p) > 0 && p[len(p)-1] <= 9 })
	if len(pts) < 2 || pts[0] < 13 || pts[len(pts)-1] > 9 {
		t.Fatalf("rewinding once the fill went on: pictures presented at %v, want from where it stood (15 s or so) back to 9 s", pts)
	}
	for i := 1; i < len(pts); i++ {
		if pts[i] >= pts[i-1] {
			t.Fatalf("rewinding: pictures presented at %v, want each before the last", pts)
		}
	}
}

// A title whose size is not a whole number of TS packets (a cut tail),
// played far ahead of its held fill to its end, ends there with the
// end-of-title BYE (it waited for the fill: the end was counted in whole
// packets).
func TestRTSPPlayAheadToTheEnd(t *testing.T) {
	o := heldOrigin(t, 200_000)
	const title = "sample-001"
	o.titles[title] = append(append([]byte(nil), o.titles[title]...), bytes.Repeat([]byte{0x47}, 100)...)
	n := startNode(t, startOrigin(t, o))
	tc, url, id, vpid, first := aheadSession(t, n, o, title, "ahead-end")
	if res := tc.do("PLAY", url+"/", "Session", id, "Range", "npt=15-"); res.StatusCode != 200 {
		t.Fatalf("PLAY npt=15-: %d", res.StatusCode)
	}
	pts, bye := pictures(tc, vpid, first, 30*time.Second, func([]float64) bool { return false })
	if !bye || len(pts) == 0 || pts[len(pts)-1] < 19 {
		t.Fatalf("played from 15 s to pictures presented at %v, BYE %v; want to the end (19 s and more) and the end-of-title BYE", pts, bye)
	}
	if !stillFilling(n, title) {
		t.Fatal("the title is no longer filling")
	}
}

// indexOf indexes a whole title.
func indexOf(t *testing.T, d []byte) *tsindex.Index {
	t.Helper()
	x, err := tsindex.BuildFrom(bytes.NewReader(d))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// While the origin refuses the read far ahead (no channel free), the
// play waits for the fill, woken at each chunk of it: the source keeps
// one waiter, not one a chunk (they piled up until the fill got there).
func TestRTSPPlayAheadWaitersDoNotPileUp(t *testing.T) {
	o := newFakeOrigin(t)
	const title = "sample-001"
	o.rate = int64(len(o.titles[title])) / 40 // the fill takes 40 s: it stays far behind 15 s
	o.busyNoWait.Store(true)
	n := startNode(t, startOrigin(t, o))
	tc, url, id, _, _ := aheadSession(t, n, o, title, "ahead-waiters")
	if res := tc.do("PLAY", url+"/", "Session", id, "Range", "npt=15-"); res.StatusCode != 200 {
		t.Fatalf("PLAY npt=15-: %d", res.StatusCode)
	}
	stored := func() int64 {
		for _, s := range n.Titles() {
			if s.ID == title {
				return s.Stored
			}
		}
		return 0
	}
	waitFor(t, 10*time.Second, "the origin to refuse the read far ahead", func() bool { return o.busyRefusals.Load() > 0 })
	from := stored()
	waitFor(t, 20*time.Second, "the fill to go on by 200 kB", func() bool { return stored() >= from+200_000 })
	n.mu.Lock()
	var src *aheadSource
	for _, s := range n.sessions {
		src = s.ahead
	}
	n.mu.Unlock()
	src.mu.Lock()
	w := len(src.waiters)
	src.mu.Unlock()
	if w > 2 {
		t.Errorf("%d waiters held by the source after the fill went on by 200 kB, want 1 or 2", w)
	}
}

// An HTTP viewer that stopped reading (a paused player) while it held the
// node's one origin read far ahead of a fill gives it up once another
// viewer waits for it: an RTSP play far ahead of another title's fill
// plays (it was silent until the HTTP viewer's write deadline).
func TestRTSPPlayAheadGetsTheReadOfAPausedHTTPViewer(t *testing.T) {
	o := heldOrigin(t, 200_000)
	o.titles["long-001"] = bytes.Repeat(o.titles["sample-002"], 8) // 12 MB: more than the sockets hold
	n := startNode(t, startOrigin(t, o), withHTTP)
	url := httpURL(n, mint(t, "ahead-paused-http", "long-001", "node-1", "", time.Minute), "long-001.ts")
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	hc, err := d.Dial("tcp", n.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	path := strings.TrimPrefix(url, "http://"+n.HTTPAddr())
	if _, err := fmt.Fprintf(hc, "GET %s HTTP/1.1\r\nHost: %s\r\nRange: bytes=6000000-\r\n\r\n", path, n.HTTPAddr()); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(hc, make([]byte, 4096)); err != nil { // then it reads no more
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the HTTP viewer's origin read", func() bool { return aheadOpen(n) == 1 })
	// Unpaced: its writes fill the socket buffers and wait at once (at
	// 1.2 times the bitrate, past the burst, they take minutes).
	n.mu.Lock()
	n.httpSessions["ahead-paused-http"].pacing.lim.Store(nil)
	n.mu.Unlock()

	tc, rurl, id, vpid, first := aheadSession(t, n, o, "sample-001", "ahead-after-http")
	if res := tc.do("PLAY", rurl+"/", "Session", id, "Range", "npt=12-"); res.StatusCode != 200 {
		t.Fatalf("PLAY npt=12-: %d", res.StatusCode)
	}
	if pts, _ := pictures(tc, vpid, first, 20*time.Second, reach(13)); len(pts) == 0 || pts[len(pts)-1] < 13 {
		t.Fatalf("RTSP play far ahead while a paused HTTP viewer held the node's read: pictures presented at %v, want to 13 s", pts)
	}
}

// An elementary-stream session (/es) that asks for a Scale plays at
// Scale 1 all the same, and so reads far ahead of the fill from the
// origin as normal play does (its read was dropped as for trick play,
// and the play waited for the held fill: no packet).
func TestRTSPPlayAheadOfAnESSessionAskingAScale(t *testing.T) {
	o := heldOrigin(t, 200_000)
	n := startNode(t, startOrigin(t, o))
	url := esURL(n, mint(t, "ahead-es-scale", "sample-001", "node-1", "", time.Minute), "sample-001")
	tc := dialRTSP(t, n)
	res := tc.do("SETUP", url+"/trackID=1", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %d", res.StatusCode)
	}
	if res := tc.do("PLAY", url+"/", "Session", sessionID(res), "Range", "npt=12-", "Scale", "2"); res.StatusCode != 200 {
		t.Fatalf("PLAY npt=12- Scale 2: %d", res.StatusCode)
	}
	end := time.Now().Add(20 * time.Second) // bounds a play that waits for the held fill
	for {
		tc.c.SetReadDeadline(end)
		ch, _, err := tc.frame()
		if err != nil {
			t.Fatalf("no video packet after PLAY npt=12- with the fill held at 200 kB: %v", err)
		}
		if ch == 0 {
			break
		}
	}
	if n.Stats().OriginRangeBytes == 0 || !stillFilling(n, "sample-001") {
		t.Fatalf("origin range bytes %d, still filling %v: want the play's bytes read far ahead of the held fill", n.Stats().OriginRangeBytes, stillFilling(n, "sample-001"))
	}
}
