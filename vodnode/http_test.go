package vodnode

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

func httpURL(n *Node, tok, path string) string {
	return "http://" + n.HTTPAddr() + "/s/" + tok + "/vod/" + path
}

func get(t *testing.T, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

func withHTTP(n *Node) { n.HTTPListen = "127.0.0.1:0" }

func TestHTTPProgressiveAndRanges(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	o := newFakeOrigin(t)
	o.rate = 300 << 10 // a fill of about 5 s
	n := startNode(t, startOrigin(t, o), withHTTP)
	data := o.titles["sample-001"]
	tok := mint(t, "h1", "sample-001", "node-1", "", time.Minute)

	// a range of a title still filling waits for the bytes and is exact
	res, b := get(t, httpURL(n, tok, "sample-001.ts"), "Range", "bytes=188-375")
	if res.StatusCode != http.StatusPartialContent || !bytes.Equal(b, data[188:376]) {
		t.Fatalf("range: %d, %d bytes", res.StatusCode, len(b))
	}
	if ct := res.Header.Get("Content-Type"); ct != "video/mp2t" {
		t.Errorf("Content-Type %q", ct)
	}
	// the whole title, while filling, with the same token (same session)
	res, b = get(t, httpURL(n, tok, "sample-001.ts"))
	if res.StatusCode != 200 || !bytes.Equal(b, data) {
		t.Fatalf("progressive: %d, %d of %d bytes", res.StatusCode, len(b), len(data))
	}
	if o.fetchCount("sample-001") != 1 {
		t.Errorf("%d fetches", o.fetchCount("sample-001"))
	}
	if s := n.Stats(); s.Sessions != 1 || s.BytesSent < int64(len(data)) {
		t.Errorf("stats %+v", s)
	}
	for _, tc := range []struct {
		name, url string
		want      int
	}{
		{"no token", "http://" + n.HTTPAddr() + "/vod/sample-001.ts", 401},
		{"bad token", httpURL(n, "x.y.z", "sample-001.ts"), 401},
		{"other title", httpURL(n, tok, "sample-002.ts"), 401},
		{"other node", httpURL(n, mint(t, "h2", "sample-001", "node-9", "", time.Minute), "sample-001.ts"), 401},
		{"unknown title", httpURL(n, mint(t, "h3", "nope", "node-1", "", time.Minute), "nope.ts"), 404},
		{"bad path", httpURL(n, tok, "sample-001/other.txt"), 404},
		{"range past the end", httpURL(n, tok, "sample-001.ts"), 416},
	} {
		var res *http.Response
		if tc.want == 416 {
			res, _ = get(t, tc.url, "Range", "bytes=99999999-")
		} else {
			res, _ = get(t, tc.url)
		}
		if res.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, res.StatusCode, tc.want)
		}
		if tc.want == 401 && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: WWW-Authenticate %q", tc.name, res.Header.Get("WWW-Authenticate"))
		}
	}
	post, err := http.Post(httpURL(n, tok, "sample-001.ts"), "text/plain", nil)
	if err != nil || post.StatusCode != 405 {
		t.Errorf("POST: %v %v", post.Status, err)
	}
	// A browser's preflight (hls.js on the operator's page, another
	// origin) is answered without a token; the refusals carry the CORS
	// headers too, so the page can read why.
	req, _ := http.NewRequest(http.MethodOptions, httpURL(n, "x", "sample-001/seg-1.ts"), nil)
	req.Header.Set("Origin", "https://portal.example.net")
	req.Header.Set("Access-Control-Request-Method", "GET")
	req.Header.Set("Access-Control-Request-Headers", "range")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 204 || res.Header.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(res.Header.Get("Access-Control-Allow-Headers"), "Range") {
		t.Errorf("preflight: %v %v", res, err)
	}
	if res, _ := get(t, httpURL(n, "not-a-token", "sample-001.ts")); res.StatusCode != 401 || res.Header.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(res.Header.Get("Access-Control-Expose-Headers"), "WWW-Authenticate") {
		t.Errorf("refusal without CORS headers: %d %v", res.StatusCode, res.Header)
	}
}

// TestHTTPSessionEnds: an HTTP session ends SessionTimeout after its last
// request; its ENDED carries the bytes sent and the time its last request
// ended (when the viewer left, for the session record), not the time the
// idle timeout fired.
func TestHTTPSessionEnds(t *testing.T) {
	o := newFakeOrigin(t)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), withHTTP, func(n *Node) {
		n.SessionTimeout, n.PauseTimeout = 500*time.Millisecond, 500*time.Millisecond
		n.ManagerAddr = maddr
	})
	tok := mint(t, "h-end", "sample-002", "node-1", "", time.Minute)
	if res, _ := get(t, httpURL(n, tok, "sample-002.ts"), "Range", "bytes=0-187"); res.StatusCode != 206 {
		t.Fatalf("GET: %d", res.StatusCode)
	}
	answered := time.Now()
	waitFor(t, 5*time.Second, "idle HTTP session ended", func() bool { return n.Stats().Sessions == 0 })
	waitFor(t, 5*time.Second, "ENDED", func() bool { return m.event("h-end", pb.SessionEvent_KIND_ENDED) != nil })
	e := m.event("h-end", pb.SessionEvent_KIND_ENDED)
	// The node's request ends when its handler returns, which may be just
	// after the client has the bytes (sendfile writes them during the
	// handler): a margin well under the 500 ms timeout.
	if at := time.UnixMilli(e.GetAtUnixMs()); e.GetReason() != "idle" || e.GetBytesSent() != 188 || at.After(answered.Add(100*time.Millisecond)) {
		t.Errorf("ENDED %+v at %v, want reason idle, 188 bytes, at the last request's end (by %v, well before the idle timeout)", e, at, answered)
	}
	if res, _ := get(t, httpURL(n, tok, "sample-002.ts")); res.StatusCode != 401 {
		t.Errorf("token reused after the session ended: %d", res.StatusCode)
	}
}

func TestHLS(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o), withHTTP)
	tok := mint(t, "hls", "sample-001", "node-1", "", time.Minute)
	url := httpURL(n, tok, "sample-001/index.m3u8")
	// Reloads of one viewer's playlist while the title fills only append
	// (RFC 8216 §6.2.1): the first lines (target duration, type) stay.
	// The viewer asks for (a byte of) the last segment listed, as a player
	// does: an EVENT playlist lists a few segments past the viewer's.
	var head string
	waitFor(t, 5*time.Second, "fill", func() bool {
		_, b := get(t, url)
		if i := strings.Count(string(b), "#EXTINF:"); i > 0 {
			get(t, httpURL(n, tok, fmt.Sprintf("sample-001/seg-%d.ts", i-1)), "Range", "bytes=0-0")
		}
		lines := strings.SplitN(string(b), "\n", 6)
		h := strings.Join(lines[:min(5, len(lines))], "\n")
		if head == "" {
			head = h
		} else if h != head {
			t.Fatalf("a reload changed the playlist's head:\n%s\nthen:\n%s", head, h)
		}
		return strings.Contains(string(b), "#EXT-X-ENDLIST")
	})
	// A new viewer of the complete title gets a VOD playlist.
	res, b := get(t, httpURL(n, mint(t, "hls-vod", "sample-001", "node-1", "", time.Minute), "sample-001/index.m3u8"))
	pl := string(b)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/vnd.apple.mpegurl" || res.Header.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(pl, "#EXT-X-PLAYLIST-TYPE:VOD") || !strings.Contains(pl, "#EXT-X-TARGETDURATION:8") || strings.Count(pl, "#EXTINF:") < 4 {
		t.Fatalf("playlist %d:\n%s", res.StatusCode, pl)
	}
	// A playlist asked for with the token in its query: its segment URIs,
	// resolved against it (RFC 3986 §5.2.2), carry the token.
	qtok := mint(t, "hls-query", "sample-001", "node-1", "", time.Minute)
	qurl := "http://" + n.HTTPAddr() + "/vod/sample-001/index.m3u8?token=" + qtok
	res, b = get(t, qurl)
	if res.StatusCode != 200 {
		t.Fatalf("playlist with the token in its query: %d", res.StatusCode)
	}
	base, _ := neturl.Parse(qurl)
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ref, err := neturl.Parse(line)
		if err != nil {
			t.Fatal(err)
		}
		if res, seg := get(t, base.ResolveReference(ref).String()); res.StatusCode != 200 || len(seg) < 188 {
			t.Fatalf("segment %s of the playlist with the token in its query: %d", line, res.StatusCode)
		}
		break
	}
	// every segment after the first starts with PAT and PMT, then a keyframe
	res, seg := get(t, httpURL(n, tok, "sample-001/seg-1.ts"))
	if res.StatusCode != 200 || len(seg) < 3*188 || seg[0] != 0x47 || seg[1]&0x1f != 0 || seg[2] != 0 {
		t.Fatalf("segment 1: %d, %d bytes", res.StatusCode, len(seg))
	}
	// a range of a segment is the same bytes (read from the title as it
	// is sent, after the tables)
	if res, part := get(t, httpURL(n, tok, "sample-001/seg-1.ts"), "Range", "bytes=100-1000"); res.StatusCode != http.StatusPartialContent || !bytes.Equal(part, seg[100:1001]) {
		t.Fatalf("range of segment 1: %d, %d bytes, equal %v", res.StatusCode, len(part), bytes.Equal(part, seg[100:1001]))
	}
	// one viewer's requests at once are bounded: beyond maxHTTPInFlight,
	// 429 with Retry-After
	n.mu.Lock()
	hs := n.httpSessions["hls"]
	n.mu.Unlock()
	hs.active.Add(maxHTTPInFlight)
	res, _ = get(t, httpURL(n, tok, "sample-001/seg-1.ts"))
	hs.active.Add(-maxHTTPInFlight)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Fatalf("a request beyond %d at once: %d, Retry-After %q", maxHTTPInFlight, res.StatusCode, res.Header.Get("Retry-After"))
	}
	// played one after the other, the segments keep every PID's continuity
	// counter continuous (a table repeated at a segment's start is an
	// exact duplicate: same counter)
	stok := mint(t, "hls-short", "short-001", "node-1", "", time.Minute)
	waitFor(t, 5*time.Second, "fill", func() bool {
		_, b := get(t, httpURL(n, stok, "short-001/index.m3u8"))
		return strings.Contains(string(b), "#EXT-X-ENDLIST")
	})
	_, b = get(t, httpURL(n, stok, "short-001/index.m3u8"))
	var all []byte
	for i := 0; i < strings.Count(string(b), "#EXTINF:"); i++ {
		_, b := get(t, httpURL(n, stok, fmt.Sprintf("short-001/seg-%d.ts", i)))
		all = append(all, b...)
	}
	if strings.Count(string(b), "#EXTINF:") < 2 {
		t.Fatalf("short title playlist:\n%s", b)
	}
	last := map[uint16]byte{}
	for off := 0; off+188 <= len(all); off += 188 {
		p := all[off : off+188]
		pid, cc := uint16(p[1]&0x1f)<<8|uint16(p[2]), p[3]&0x0f
		if p[3]&0x10 == 0 { // no payload: the counter does not move
			continue
		}
		if prev, ok := last[pid]; ok && cc != (prev+1)&0x0f && cc != prev {
			t.Fatalf("PID %#x: continuity counter %d after %d at byte %d of the segments", pid, cc, prev, off)
		}
		last[pid] = cc
	}
	if res, _ := get(t, httpURL(n, tok, "sample-001/seg-99.ts")); res.StatusCode != 404 {
		t.Errorf("segment 99: %d", res.StatusCode)
	}
	r := runFFmpegHTTP(t, url, 6)
	if r.frames < 130 {
		t.Errorf("ffmpeg HLS: %d frames for 6 s\n%s", r.frames, r.stderr)
	}
	r = runFFmpegHTTP(t, httpURL(n, tok, "sample-001.ts"), 4)
	if r.frames < 90 {
		t.Errorf("ffmpeg progressive: %d frames for 4 s\n%s", r.frames, r.stderr)
	}
}

// runFFmpegHTTP decodes seconds of an HTTP URL with ffmpeg.
func runFFmpegHTTP(t *testing.T, url string, seconds float64) ffmpegResult {
	t.Helper()
	return runFFmpegArgs(t, seconds, "-i", url)
}

// TestVLCHTTP plays over HTTP with VLC as an unprivileged user (VLC
// refuses root; the packaged VLC has no live555 RTSP client, so HTTP is
// how it plays here) and checks the recording decodes.
func TestVLCHTTP(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	if _, err := exec.LookPath("cvlc"); err != nil {
		t.Skip("cvlc not installed")
	}
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o), withHTTP)
	dir, err := os.MkdirTemp("", "vlc")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o777)
	for _, path := range []string{"sample-001.ts", "sample-001/index.m3u8"} {
		out := filepath.Join(dir, strings.ReplaceAll(path, "/", "_")+".rec.ts")
		url := httpURL(n, mint(t, "vlc-"+path, "sample-001", "node-1", "", time.Minute), path)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, "cvlc", "-I", "dummy", url,
			"--sout", "#std{access=file,mux=ts,dst="+out+"}", "--run-time", "4", "vlc://quit")
		cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_RUNTIME_DIR="+dir) // PulseAudio's runtime directory too (else /tmp/pulse-*, left behind)
		if os.Getuid() == 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		log := runFor(t, cmd, 25*time.Second)
		cancel()
		frames := countFrames(t, out)
		t.Logf("vlc %s: %d frames", path, frames)
		if frames < 50 {
			t.Errorf("vlc %s: %d frames\n%s", path, frames, log)
		}
	}
}

// TestHTTPTokenBoundToItsClient: a request of a live HTTP session's token
// from another address is 401 (the token is the viewer's only secret: a
// copied URL does not play elsewhere while the session lives).
func TestHTTPTokenBoundToItsClient(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o), withHTTP)
	url := httpURL(n, mint(t, "bound", "sample-001", "node-1", "127.0.0.1", time.Minute), "sample-001.ts")
	if res, _ := get(t, url, "Range", "bytes=0-187"); res.StatusCode != http.StatusPartialContent {
		t.Fatalf("from the token's client: %d", res.StatusCode)
	}
	other := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	res, err := other.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the live session's token from 127.0.0.2: %d, want 401", res.StatusCode)
	}
}

// TestHTTPStalledReaderEnded: a progressive player that stops reading
// (hung, or paused for long) while its connection stays open is
// disconnected once a write has waited SessionTimeout, and its session
// ends SessionTimeout later: its reservation does not stay for as long as
// the connection lives. Its ENDED is dated by its last write that went
// through, not the write deadline (the session record's end).
func TestHTTPStalledReaderEnded(t *testing.T) {
	o := newFakeOrigin(t)
	// A title larger than what the loopback's socket buffers take in.
	o.titles["long-001"] = bytes.Repeat(o.titles["sample-001"], 8)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), withHTTP, func(n *Node) { n.SessionTimeout, n.PauseTimeout = time.Second, time.Second; n.ManagerAddr = maddr })
	tok := mint(t, "stall", "long-001", "node-1", "", time.Minute)
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return serr
	}}
	c, err := d.Dial("tcp", n.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /s/%s/vod/long-001.ts HTTP/1.1\r\nHost: node\r\n\r\n", tok)
	if _, err := io.ReadFull(c, make([]byte, 8192)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the session to start", func() bool { return n.Stats().Sessions == 1 })
	// Unpaced: the socket buffers fill at once (at 1.2 times the
	// bitrate, past the burst, they take minutes).
	n.mu.Lock()
	n.httpSessions["stall"].pacing.lim.Store(nil)
	n.mu.Unlock()
	// Reads nothing more, keeps the connection open.
	waitFor(t, 20*time.Second, "the stalled session to end", func() bool { return n.Stats().Sessions == 0 })
	waitFor(t, 5*time.Second, "ENDED", func() bool { return m.event("stall", pb.SessionEvent_KIND_ENDED) != nil })
	seen := time.Now()
	// The write that stalled waited SessionTimeout after the last one
	// that went through, and the session ended SessionTimeout after that
	// request: the end reported (the last write that went through) is at
	// least 2 s before the ENDED was seen; the stalled request's end
	// would be 1 s and a little before.
	if at := time.UnixMilli(m.event("stall", pb.SessionEvent_KIND_ENDED).GetAtUnixMs()); at.After(seen.Add(-1900 * time.Millisecond)) {
		t.Fatalf("ENDED at %v, %v before it was seen: want the last write that went through, 2 SessionTimeouts (2 s) before", at, seen.Sub(at))
	}
}

// TestHLSPauseOutlivesSessionTimeout: an HLS viewer that pauses (asks for
// nothing once its buffer is full) keeps its session for PauseTimeout,
// longer than the RTSP SessionTimeout: after an idle RTSP session set up
// at the same time has timed out, the viewer's next segment is served in
// the same session; the session then ends PauseTimeout after its last
// request. The default is DefaultPauseTimeout, never below
// SessionTimeout. (HTTP sessions ended after SessionTimeout: a pause
// longer than the player's buffer plus a minute ended in 401.)
func TestHLSPauseOutlivesSessionTimeout(t *testing.T) {
	o := newFakeOrigin(t)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	// A session timeout a loaded machine's request round trips stay well
	// within (the RTSP session is silent between its SETUP and PLAY).
	const idle = 4 * time.Second
	n := startNode(t, startOrigin(t, o), withHTTP, func(n *Node) {
		n.SessionTimeout, n.PauseTimeout, n.ManagerAddr = time.Second, idle, maddr
	})
	waitPrefetch(t, n, "sample-002")
	tok := mint(t, "hls-pause", "sample-002", "node-1", "", time.Minute)
	if res, b := get(t, httpURL(n, tok, "sample-002/index.m3u8")); res.StatusCode != 200 || !strings.Contains(string(b), "seg-1.ts") {
		t.Fatalf("playlist: %d\n%s", res.StatusCode, b)
	}
	if res, _ := get(t, httpURL(n, tok, "sample-002/seg-0.ts")); res.StatusCode != 200 {
		t.Fatalf("segment 0: %d", res.StatusCode)
	}
	// The pause: an RTSP session set up now, silent, times out meanwhile.
	c := dialRTSP(t, n)
	c.play(nodeURL(n, mint(t, "rtsp-idle", "sample-001", "node-1", "", time.Minute), "sample-001"))
	waitFor(t, 5*time.Second, "the idle RTSP session to time out", func() bool {
		return m.event("rtsp-idle", pb.SessionEvent_KIND_ENDED) != nil
	})
	if e := m.event("hls-pause", pb.SessionEvent_KIND_ENDED); e != nil {
		t.Fatalf("the HLS session ended with the RTSP one: %+v", e)
	}
	// Taken before the request is sent: the node counts the idle time from
	// the request's end, after this (once it is answered, the test may be
	// slow to take the time on a loaded machine).
	last := time.Now()
	if res, _ := get(t, httpURL(n, tok, "sample-002/seg-1.ts")); res.StatusCode != 200 {
		t.Fatalf("segment 1 after the pause: %d, want 200 (the same session)", res.StatusCode)
	}
	waitFor(t, 3*idle, "the HLS session to end idle", func() bool { return m.event("hls-pause", pb.SessionEvent_KIND_ENDED) != nil })
	if e, took := m.event("hls-pause", pb.SessionEvent_KIND_ENDED), time.Since(last); e.GetReason() != "idle" || took < idle {
		t.Errorf("ENDED %+v %v after the last request, want reason idle after %v", e, took, idle)
	}

	for _, c := range []struct{ session, idle, want time.Duration }{
		{0, 0, DefaultPauseTimeout},
		{10 * time.Minute, 0, 10 * time.Minute},
		{time.Minute, 30 * time.Second, time.Minute},
		{time.Minute, 2 * time.Minute, 2 * time.Minute},
	} {
		n := startNode(t, startOrigin(t, o), func(n *Node) { n.SessionTimeout, n.PauseTimeout = c.session, c.idle })
		if n.PauseTimeout != c.want {
			t.Errorf("SessionTimeout %v, PauseTimeout %v: %v, want %v", c.session, c.idle, n.PauseTimeout, c.want)
		}
	}
}
