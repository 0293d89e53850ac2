package vodnode

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestOneTokenOneViewer: while an admission session is live on the node,
// its token starts no second session, from another connection or over
// HTTP; a second DESCRIBE by the viewer itself is fine. Of eight players
// racing with one token exactly one plays.
func TestOneTokenOneViewer(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o), withHTTP)
	tok := mint(t, "one", "sample-001", "node-1", "", time.Minute)
	url := nodeURL(n, tok, "sample-001")
	a := dialRTSP(t, n)
	for i := range 2 {
		if res := a.do("DESCRIBE", url); res.StatusCode != 200 {
			t.Fatalf("DESCRIBE %d before SETUP: %s", i+1, statusLine(res))
		}
	}
	id := a.play(url)
	b := dialRTSP(t, n)
	for _, tc := range []struct {
		name string
		c    *testClient
		m    string
		hdr  []string
	}{
		{"DESCRIBE from another connection", b, "DESCRIBE", nil},
		{"SETUP from another connection", b, "SETUP", []string{"Transport", "RTP/AVP/TCP;unicast"}},
	} {
		u := url
		if tc.m == "SETUP" {
			u += "/trackID=0"
		}
		res := tc.c.do(tc.m, u, tc.hdr...)
		if res.StatusCode != 401 || !strings.Contains(string(res.Body), "already playing") {
			t.Errorf("%s: %s, want 401 already playing", tc.name, statusLine(res))
		}
	}
	if res, body := get(t, httpURL(n, tok, "sample-001.ts"), "Range", "bytes=0-187"); res.StatusCode != 401 {
		t.Errorf("HTTP GET with the token of a live RTSP session: %d %s", res.StatusCode, body)
	}
	if res := a.do("DESCRIBE", url); res.StatusCode != 200 {
		t.Errorf("DESCRIBE on the session's own connection: %s", statusLine(res))
	}
	if s := n.Stats().Sessions; s != 1 {
		t.Errorf("%d sessions, want 1", s)
	}
	if res := a.do("TEARDOWN", url+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("TEARDOWN: %s", statusLine(res))
	}

	// eight players with one token at once
	race := nodeURL(n, mint(t, "race", "sample-002", "node-1", "", time.Minute), "sample-002")
	const players = 8
	codes := make([]int, players)
	var wg sync.WaitGroup
	for i := range players {
		c := dialRTSP(t, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := c.do("SETUP", race+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast")
			codes[i] = int(res.StatusCode)
		}()
	}
	wg.Wait()
	ok := 0
	for _, c := range codes {
		switch c {
		case 200:
			ok++
		case 401:
		default:
			t.Errorf("racing SETUP answered %d", c)
		}
	}
	if ok != 1 {
		t.Errorf("%d of %d racing SETUPs with one token succeeded (%v), want 1", ok, players, codes)
	}

	// HTTP first: its token starts no RTSP session; more HTTP requests of
	// the same token are the same viewer
	htok := mint(t, "http-one", "sample-003", "node-1", "", time.Minute)
	if res, _ := get(t, httpURL(n, htok, "sample-003.ts"), "Range", "bytes=0-187"); res.StatusCode != http.StatusPartialContent {
		t.Fatalf("HTTP GET: %d", res.StatusCode)
	}
	if res, _ := get(t, httpURL(n, htok, "sample-003.ts"), "Range", "bytes=188-375"); res.StatusCode != http.StatusPartialContent {
		t.Errorf("second ranged GET of the same viewer: %d", res.StatusCode)
	}
	hurl := nodeURL(n, htok, "sample-003")
	if res := b.do("DESCRIBE", hurl); res.StatusCode != 401 {
		t.Errorf("RTSP DESCRIBE with the token of a live HTTP session: %s", statusLine(res))
	}
	if res := b.do("SETUP", hurl+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast"); res.StatusCode != 401 {
		t.Errorf("RTSP SETUP with the token of a live HTTP session: %s", statusLine(res))
	}
	want := 2 // the race's winner and the HTTP viewer
	if s := n.Stats().Sessions; s != want {
		t.Errorf("%d sessions, want %d", s, want)
	}
}

// TestHTTPOneViewerPace: the requests of one token share one pace, HLS
// segments included: once the burst is spent, a progressive range and a
// segment fetched at the same time from two connections together take
// about their bytes at 1.5 times the title's bitrate (here about 3.5 s),
// not the bandwidth of two viewers.
func TestHTTPOneViewerPace(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o), withHTTP)
	tok := mint(t, "pace", "sample-001", "node-1", "", time.Minute)
	data := o.titles["sample-001"]
	bps := float64(len(data)) * 8 / 20 // the sample's bitrate, near enough
	burst := int(bps / 8 * httpBurst)
	if res, b := get(t, httpURL(n, tok, "sample-001.ts"), "Range", fmt.Sprintf("bytes=0-%d", burst-1)); res.StatusCode != 206 || len(b) != burst {
		t.Fatalf("burst GET: %d, %d bytes", res.StatusCode, len(b))
	}
	start := time.Now()
	var wg sync.WaitGroup
	var segBytes int
	wg.Add(2)
	go func() {
		defer wg.Done()
		get(t, httpURL(n, tok, "sample-001.ts"), "Range", fmt.Sprintf("bytes=%d-%d", burst, burst+100_000-1))
	}()
	go func() {
		defer wg.Done()
		res, b := get(t, httpURL(n, tok, "sample-001/seg-3.ts"))
		if res.StatusCode != 200 {
			t.Errorf("segment: %d", res.StatusCode)
		}
		segBytes = len(b)
	}()
	wg.Wait()
	took := time.Since(start)
	floor := time.Duration(float64(100_000+segBytes) / (bps / 8 * httpPace) * 0.8 * float64(time.Second))
	t.Logf("%d bytes after the burst in %v (floor %v)", 100_000+segBytes, took, floor)
	if took < floor {
		t.Errorf("one viewer's requests took %v, faster than its pace allows (%v)", took, floor)
	}
}

// TestSetupAgainReplaces: a viewer that sets its session up again on its
// connection (ffmpeg does when no UDP reaches it: PAUSE, then SETUP over
// TCP without Session) gets a new session in place of the old one, never
// two: the old one is gone (454), the new one plays, the manager hears
// nothing until the TEARDOWN, and the node's reservation is one title's.
func TestSetupAgainReplaces(t *testing.T) {
	o := newFakeOrigin(t)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.ManagerAddr = maddr })
	url := nodeURL(n, mint(t, "again", "sample-001", "node-1", "", time.Minute), "sample-001")
	rtpc, rtcpc := udpPair(t)
	c := dialRTSP(t, n)
	old := c.setupUDP(url, rtpc, rtcpc)
	if res := c.do("PAUSE", url+"/", "Session", old); res.StatusCode != 200 {
		t.Fatalf("PAUSE: %s", statusLine(res))
	}
	res := c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP again over TCP: %s", statusLine(res))
	}
	id := sessionID(res)
	if res := c.do("PLAY", url+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("PLAY: %s", statusLine(res))
	}
	if ch, _, err := c.frame(); err != nil || ch != 0 {
		t.Fatalf("no media over TCP: %d %v", ch, err)
	}
	if res := c.do("GET_PARAMETER", url+"/", "Session", old); res.StatusCode != 454 {
		t.Errorf("the replaced session: %s", statusLine(res))
	}
	n.mu.Lock()
	reserved, live := n.reserved, n.sessions[id]
	n.mu.Unlock()
	if s := n.Stats().Sessions; s != 1 || live == nil || reserved != live.meta.Bitrate {
		t.Errorf("%d sessions, %d bit/s reserved", s, reserved)
	}
	waitFor(t, 5*time.Second, "STARTED", func() bool { return m.event("again", pb.SessionEvent_KIND_STARTED) != nil })
	if e := m.event("again", pb.SessionEvent_KIND_ENDED); e != nil {
		t.Fatalf("ENDED reported for a replaced session: %+v", e)
	}
	if res := c.do("TEARDOWN", url+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("TEARDOWN: %s", statusLine(res))
	}
	waitFor(t, 5*time.Second, "ENDED", func() bool { return m.event("again", pb.SessionEvent_KIND_ENDED) != nil })
	if evs := m.eventsOf("again", pb.SessionEvent_KIND_ENDED); len(evs) != 1 || evs[0].GetReason() != "teardown" {
		t.Errorf("ENDED events %v, want one, teardown", evs)
	}
	if res := dialRTSP(t, n).do("DESCRIBE", url); res.StatusCode != 401 {
		t.Errorf("token after the TEARDOWN: %s", statusLine(res))
	}
}
