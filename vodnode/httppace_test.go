package vodnode

import (
	"fmt"
	"testing"
	"time"
)

// A seek gives the viewer its burst back, at most once per
// httpSeekRefill; without a bitrate nothing is paced.
func TestPacingSeekRefill(t *testing.T) {
	var p pacing
	p.start(8_000_000, nil) // 1 MB/s: a 5 MB burst
	burst := float64(p.burst)
	if p.burst != 5_000_000 || p.lim.Load().Tokens() < burst*0.99 {
		t.Fatalf("burst %d, tokens %.0f", p.burst, p.lim.Load().Tokens())
	}
	spend := func() {
		t.Helper()
		if !p.lim.Load().AllowN(time.Now(), p.burst) {
			t.Fatal("could not spend the burst")
		}
	}
	full := func() bool { return p.lim.Load().Tokens() >= burst*0.9 }
	spend()
	t0 := time.Now()
	p.seeked(t0)
	if !full() {
		t.Fatalf("first seek: %.0f bytes of burst, want %d", p.lim.Load().Tokens(), p.burst)
	}
	spend()
	p.seeked(t0.Add(httpSeekRefill - time.Second))
	if full() {
		t.Fatal("a second seek within httpSeekRefill got the burst back")
	}
	p.seeked(t0.Add(httpSeekRefill))
	if !full() {
		t.Fatal("a seek httpSeekRefill after the last refill did not get the burst back")
	}

	var none pacing
	none.start(0, nil)
	none.seeked(time.Now())
	if err := none.wait(t.Context(), 1<<30); err != nil || none.lim.Load() != nil {
		t.Fatalf("unpaced: %v", err)
	}
}

// Over HTTP: the next HLS segment and a range that continues the download
// are not seeks; a segment further on, or a range elsewhere, is.
func TestHTTPSeekDetected(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o), withHTTP)
	refilled := func(sid string) bool { return sessionOf(n, sid).pacing.lastRefill.Load() != 0 }

	hls := mint(t, "hls-seek", "sample-001", "node-1", "", time.Minute)
	for _, seg := range []int{0, 1, 1, 2} { // in order, one asked again
		if res, _ := get(t, httpURL(n, hls, fmt.Sprintf("sample-001/seg-%d.ts", seg))); res.StatusCode != 200 {
			t.Fatalf("seg-%d: %d", seg, res.StatusCode)
		}
	}
	if refilled("hls-seek") {
		t.Fatal("segments in order counted as a seek")
	}
	if res, _ := get(t, httpURL(n, hls, "sample-001/seg-4.ts")); res.StatusCode != 200 {
		t.Fatalf("seg-4: %d", res.StatusCode)
	}
	if !refilled("hls-seek") {
		t.Fatal("a jump from segment 2 to 4 did not count as a seek")
	}

	ts := mint(t, "ts-seek", "sample-001", "node-1", "", time.Minute)
	if res, _ := get(t, httpURL(n, ts, "sample-001.ts"), "Range", "bytes=0-99999"); res.StatusCode != 206 {
		t.Fatalf("first range: %d", res.StatusCode)
	}
	if res, _ := get(t, httpURL(n, ts, "sample-001.ts"), "Range", "bytes=100000-199999"); res.StatusCode != 206 {
		t.Fatalf("continuing range: %d", res.StatusCode)
	}
	if refilled("ts-seek") {
		t.Fatal("a range continuing the download counted as a seek")
	}
	if res, _ := get(t, httpURL(n, ts, "sample-001.ts"), "Range", "bytes=1000000-1099999"); res.StatusCode != 206 {
		t.Fatalf("range elsewhere: %d", res.StatusCode)
	}
	if !refilled("ts-seek") {
		t.Fatal("a range elsewhere did not count as a seek")
	}
}

// After a seek back, the segments that follow in order are no seeks,
// though they lie below the furthest one asked for (they counted as one
// each, every httpSeekRefill, until the player passed that segment again).
func TestHLSPlayAfterSeekBackIsNoSeek(t *testing.T) {
	n, _, seg := hlsPlay(t, "hls-back")
	for i := range 3 {
		seg(i)
	}
	hs := sessionOf(n, "hls-back")
	if hs.pacing.lastRefill.Load() != 0 {
		t.Fatal("segments in order counted as a seek")
	}
	seg(0) // back from 2 to 0: a seek
	if hs.pacing.lastRefill.Load() == 0 {
		t.Fatal("a jump back from segment 2 to 0 did not count as a seek")
	}
	hs.pacing.lastRefill.Store(0) // as if httpSeekRefill had passed
	seg(1)
	seg(2)
	if hs.pacing.lastRefill.Load() != 0 {
		t.Fatal("segments 1 and 2 in order after the seek back to 0 counted as a seek")
	}
}

// The node's burst pool grants HTTP viewers' bursts only within the
// egress no session reserves: ten viewers of a 0.6 Mbit/s title (375 KB
// bursts) starting in the same instant on a node with 8 Mbit/s spare
// (1 MB a second) get 1 MB of bursts between them, the rest start at
// their pace; a second later the pool has refilled; with every bit/s
// reserved, none; without a capacity, every burst whole.
func TestBurstPoolSharesOutBursts(t *testing.T) {
	now := time.Now()
	pool := newBurstPool(20_000_000)
	pool.setSpare(8_000_000)
	tokens := func(p *pacing, at time.Time) int { return int(p.lim.Load().TokensAt(at)) }
	total, full := 0, 0
	for range 10 {
		var p pacing
		p.pool = pool
		p.limit, p.burst = 75_000*httpPace, 375_000
		p.lim.Store(p.newLimiter(now))
		got := tokens(&p, now)
		total += got
		if got == p.burst {
			full++
		}
	}
	if total < 990_000 || total > 1_000_000 || full != 2 {
		t.Fatalf("bursts granted %d bytes (%d whole), want the pool's 1 MB (2 whole)", total, full)
	}
	var late pacing
	late.pool, late.limit, late.burst = pool, 75_000*httpPace, 375_000
	late.lim.Store(late.newLimiter(now.Add(time.Second)))
	if got := tokens(&late, now.Add(time.Second)); got != late.burst {
		t.Fatalf("a second later: %d bytes of burst, want %d", got, late.burst)
	}
	pool.setSpare(0)
	var none pacing
	none.pool, none.limit, none.burst = pool, 75_000*httpPace, 375_000
	none.lim.Store(none.newLimiter(now.Add(3 * time.Second)))
	if got := tokens(&none, now.Add(3*time.Second)); got != 0 {
		t.Fatalf("every bit/s reserved: %d bytes of burst, want 0", got)
	}
	if newBurstPool(0) != nil {
		t.Fatal("a node without an egress capacity has a pool")
	}
	var free pacing
	free.start(600_000, nil)
	if got := tokens(&free, time.Now()); got < free.burst-1000 {
		t.Fatalf("no pool: %d bytes of burst, want %d", got, free.burst)
	}
}

// hlsPlay starts a node with HTTP and returns it, the token of session
// sid for sample-001 and a func that gets segment i of it whole.
func hlsPlay(t *testing.T, sid string) (*Node, string, func(i int)) {
	t.Helper()
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o), withHTTP)
	hls := mint(t, sid, "sample-001", "node-1", "", time.Minute)
	return n, hls, func(i int) {
		t.Helper()
		if res, _ := get(t, httpURL(n, hls, fmt.Sprintf("sample-001/seg-%d.ts", i))); res.StatusCode != 200 {
			t.Fatalf("seg-%d: %d", i, res.StatusCode)
		}
	}
}

// sessionOf returns n's HTTP session sid.
func sessionOf(n *Node, sid string) *httpSession {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.httpSessions[sid]
}
