package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "vodcluster/proto/vodcluster/v1"
)

// End-to-end test of a web browser playing through the front door as an
// operator's web portal player does: Chromium (headless) runs hls.js on a
// page served from the test's own origin, so every request to the front
// door and to the nodes is a cross-origin one that the browser lets the
// page read only when its answer carries the CORS headers.
//
// The test needs Chromium on PATH and hls.js: VODCLUSTER_HLSJS names
// hls.min.js (.ci/run fetches a pinned release and sets it). Without
// either it is skipped, unless VODCLUSTER_BROWSER_TEST=required (set by
// .ci/run), when it fails.

// browserCase is one player of the page: it plays Src with hls.js until
// MinSeconds of media have played or hls.js gives up.
type browserCase struct {
	Name       string  `json:"name"`
	Src        string  `json:"src"`
	MinSeconds float64 `json:"minSeconds"`
	SeekTo     float64 `json:"seekTo,omitempty"` // seconds of media to seek to once playing
	Bearer     string  `json:"bearer,omitempty"` // a token sent as "Authorization: Bearer" on every request
}

// browserReport is what the page posts for a case (testdata/hlsjs-player.html).
type browserReport struct {
	Name string
	Env  struct {
		Hlsjs                         string
		HlsSupported, MseH264, MseAAC bool
		UserAgent, Origin             string
	}
	Unsupported bool   // hls.js finds no usable MediaSource
	PageError   string // a script error on the page (name "*")

	Played bool // MinSeconds of media played
	// A fatal hls.js error: its type, details, the HTTP status it read
	// (0: the browser hid it), the URL and reason.
	Fatal                      bool
	ErrorType, Details         string
	Status                     int
	StatusText, URL, Reason    string
	MediaError                 string // the <video> element's error
	CurrentTime                float64
	StartTime                  *float64 // currentTime when playing began (or the seek ended)
	TotalFrames, DroppedFrames int      // getVideoPlaybackQuality
	WallMs, PlayingMs          float64  // since the case started; since playing began
	URLs                       []string // requested by hls.js, in order (20 at most)
	NonFatal                   []string // details of non-fatal hls.js errors
	PlaylistTypes              []string // of each media playlist load: VOD, EVENT or ""
	Buffered                   [][2]float64
	ReadyState                 int
	Paused                     bool
}

// browserTools returns the Chromium and hls.min.js the test runs, or
// skips the test (fails it when VODCLUSTER_BROWSER_TEST=required).
func browserTools(t *testing.T) (chromium, hlsjs string) {
	t.Helper()
	missing := func(why string) {
		t.Helper()
		if os.Getenv("VODCLUSTER_BROWSER_TEST") == "required" {
			t.Fatalf("%s (VODCLUSTER_BROWSER_TEST=required: .ci/run installs chromium and fetches hls.js)", why)
		}
		t.Skipf("%s: the browser test needs both (.ci/run installs chromium and fetches hls.js)", why)
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		missing("chromium not found on PATH (apt-get install chromium)")
	}
	hlsjs = os.Getenv("VODCLUSTER_HLSJS")
	if hlsjs == "" {
		missing("VODCLUSTER_HLSJS is not set (the path of hls.min.js)")
	}
	if _, err := os.Stat(hlsjs); err != nil {
		missing(fmt.Sprintf("VODCLUSTER_HLSJS: %v", err))
	}
	return chromium, hlsjs
}

// TestBrowserPlaysHLS: a web page on another origin than the front door
// plays titles with hls.js in headless Chromium, with a portal's
// subscriber token in the URL (or in "Authorization: Bearer" on every
// request, which makes the browser send a preflight OPTIONS first). The
// browser follows the front door's 302 to the node and reads the playlist
// and segments across origins; hls.js transmuxes the MPEG-TS (H.264 high,
// AAC) into Media Source Extensions and the <video> plays 4 s of media,
// decoding frames, in real time: titles the node fills as they play (their
// EVENT playlists reloaded from the node), and a title stored whole (a VOD
// playlist) after a seek to 12 s.
// The manager holds one HTTP session of the subscriber per title (no more:
// the player's reloads stay on the node) and the node sent the bytes.
// Players given a token for another title, and one signed with another
// key, stop with hls.js's fatal manifestLoadError and read the front
// door's 403 and 401: the refusals carry the CORS headers too, else the
// browser would hide their status (0).
func TestBrowserPlaysHLS(t *testing.T) {
	t.Parallel()
	chromium, hlsjs := browserTools(t)
	secret := filepath.Join(t.TempDir(), "portal-secret")
	c := startTestCluster(t, 1, 100_000_000, func(o *clusterOptions) { o.PortalSecretFile = secret })
	adm := c.admin(t)
	sign := func(secret, title string) string {
		t.Helper()
		tok, err := signSubscriberToken(tokenRequest{User: "demo", Title: title, TTL: time.Hour, SecretFile: secret}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	otherKey := filepath.Join(t.TempDir(), "another-portal-secret")
	if err := os.WriteFile(otherKey, []byte(rand.Text()+rand.Text()), 0o600); err != nil {
		t.Fatal(err)
	}
	const filling, stored, header, minSeconds = "sample-008", "sample-011", "sample-012", 4.0
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := adm.Prefetch(ctx, &v1.PlacementRequest{TitleId: stored, NodeId: "node-1"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, stored+" stored whole on node-1", func() bool { return len(c.holders(stored)) == 1 })
	front := "http://" + c.manager.HTTPAddr()
	hlsURL := func(title, token string) string { return front + "/vod/" + title + "/index.m3u8?token=" + token }
	cases := []browserCase{
		{Name: "play", Src: hlsURL(filling, sign(secret, filling)), MinSeconds: minSeconds},
		{Name: "seek", Src: hlsURL(stored, sign(secret, "")), MinSeconds: minSeconds, SeekTo: 12},
		{Name: "bearer", Src: front + "/vod/" + header + "/index.m3u8", MinSeconds: minSeconds, Bearer: sign(secret, header)},
		{Name: "other-title", Src: hlsURL("sample-009", sign(secret, filling)), MinSeconds: minSeconds},
		{Name: "wrong-key", Src: hlsURL("sample-010", sign(otherKey, "")), MinSeconds: minSeconds},
	}
	got := runBrowser(t, chromium, hlsjs, cases, 60*time.Second)

	env := got["play"].Env
	t.Logf("%s, hls.js %s, page at %s", env.UserAgent, env.Hlsjs, env.Origin)
	if !env.MseH264 || !env.MseAAC {
		t.Fatalf("this browser's Media Source Extensions take no H.264 (%v) or no AAC (%v) in fragmented MP4: hls.js cannot play the titles",
			env.MseH264, env.MseAAC)
	}
	if env.Origin == front {
		t.Fatalf("the page's origin %s is the front door's: CORS was not exercised", env.Origin)
	}
	node := "http://" + c.nodes[0].HTTPAddr() + "/s/"
	for _, tc := range []struct {
		name, title, playlist string
		seekTo                float64
	}{{"play", filling, "", 0}, {"seek", stored, "VOD", 12}, {"bearer", header, "", 0}} {
		r := got[tc.name]
		t.Logf("%s", r)
		if !r.Played {
			t.Errorf("%s: not played", tc.name)
			continue
		}
		if r.TotalFrames-r.DroppedFrames < int(minSeconds*25/2) {
			t.Errorf("%s: %d frames decoded, %d dropped in %.0f s of media at 25 frame/s", tc.name, r.TotalFrames, r.DroppedFrames, minSeconds)
		}
		if r.PlayingMs < 1000*(minSeconds-1) {
			t.Errorf("%s: %.0f s of media played in %.0f ms: not real time", tc.name, minSeconds, r.PlayingMs)
		}
		if st := deref(r.StartTime); st < tc.seekTo-0.5 || st > tc.seekTo+0.5 {
			t.Errorf("%s: played from %.3f s, want %.0f s", tc.name, st, tc.seekTo)
		}
		segs := 0
		for _, u := range r.URLs {
			if strings.HasPrefix(u, node) && strings.Contains(u, "/vod/"+tc.title+"/seg-") {
				segs++
			}
		}
		if len(r.URLs) == 0 || r.URLs[0] != cases[slices.IndexFunc(cases, func(c browserCase) bool { return c.Name == tc.name })].Src || segs == 0 {
			t.Errorf("%s: hls.js asked %v: want the front door's URL, then segments at the node it redirected to (%s...)", tc.name, r.URLs, node)
		}
		if tc.playlist != "" && (len(r.PlaylistTypes) == 0 || r.PlaylistTypes[0] != tc.playlist) {
			t.Errorf("%s: playlist types %q, want %s", tc.name, r.PlaylistTypes, tc.playlist)
		}
	}
	for _, tc := range []struct {
		name   string
		status int
	}{{"other-title", http.StatusForbidden}, {"wrong-key", http.StatusUnauthorized}} {
		r := got[tc.name]
		switch {
		case !r.Fatal || r.ErrorType != "networkError" || r.Details != "manifestLoadError":
			t.Errorf("%s, want hls.js's fatal networkError manifestLoadError", r)
		case r.Status == 0:
			t.Errorf("%s: the browser hid the front door's answer (status 0): it lacks the CORS headers", tc.name)
		case r.Status != tc.status:
			t.Errorf("%s: status %d (%s), want %d", tc.name, r.Status, r.StatusText, tc.status)
		}
	}

	var sess []string
	var bps int64
	for _, s := range sessions(t, adm) {
		sess = append(sess, fmt.Sprintf("%s %s %s %s", s.User, s.TitleId, s.Protocol, s.State))
		bps += s.BitrateBps
	}
	slices.Sort(sess)
	want := []string{"demo " + filling + " http playing", "demo " + stored + " http playing", "demo " + header + " http playing"}
	if !slices.Equal(sess, want) {
		t.Errorf("the manager's sessions: %q, want %q", sess, want)
	}
	if sent, want := c.nodes[0].Stats().BytesSent, int64(minSeconds)*bps/8; sent < want {
		t.Errorf("the node sent %d bytes, want at least the %.0f s of media played of each title (%d)", sent, minSeconds, want)
	}
}

// String is a report in brief, the tokens in its URLs cut short.
func (r browserReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", r.Name)
	switch {
	case r.Played:
		fmt.Fprintf(&b, "played %.2f s of media from %.3f s in %.0f ms (%.0f ms after the case began), %d frames (%d dropped)",
			r.CurrentTime-deref(r.StartTime), deref(r.StartTime), r.PlayingMs, r.WallMs, r.TotalFrames, r.DroppedFrames)
	case r.Fatal:
		fmt.Fprintf(&b, "fatal hls.js %s %s, status %d %q, %s, %s", r.ErrorType, r.Details, r.Status, r.StatusText, shortToken(r.URL), r.Reason)
	case r.MediaError != "":
		fmt.Fprintf(&b, "media error %s", r.MediaError)
	}
	fmt.Fprintf(&b, "; at %.3f s, ready state %d, paused %v, buffered %v", r.CurrentTime, r.ReadyState, r.Paused, r.Buffered)
	var us []string
	for _, u := range r.URLs {
		us = append(us, shortToken(u))
	}
	fmt.Fprintf(&b, "; playlists %q; asked %v; non-fatal errors %v", r.PlaylistTypes, us, r.NonFatal)
	return b.String()
}

// shortToken cuts the tokens (JWTs) in u to their first characters.
func shortToken(u string) string {
	return jwtRe.ReplaceAllStringFunc(u, func(s string) string { return s[:8] + "…" })
}

var jwtRe = regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)

func deref(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}

// runBrowser serves testdata/hlsjs-player.html, hls.js and cases from a
// loopback server of its own, opens the page in headless Chromium and
// returns the page's report of every case, by name. It fails the test
// when Chromium exits, the page has a script error or hls.js finds no
// Media Source Extensions, or deadline passes first.
func runBrowser(t *testing.T, chromium, hlsjs string, cases []browserCase, deadline time.Duration) map[string]browserReport {
	t.Helper()
	page, err := os.ReadFile(filepath.Join("testdata", "hlsjs-player.html"))
	if err != nil {
		t.Fatal(err)
	}
	reports := make(chan browserReport, 4*len(cases)+4)
	var mu sync.Mutex
	var progress string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})
	mux.HandleFunc("GET /hls.min.js", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, hlsjs) })
	mux.HandleFunc("GET /cases", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(cases)
	})
	mux.HandleFunc("POST /report", func(w http.ResponseWriter, r *http.Request) {
		var rep browserReport
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&rep); err != nil {
			rep = browserReport{Name: "*", PageError: "undecodable report: " + err.Error()}
		}
		select {
		case reports <- rep:
		default: // the test has what it needs
		}
	})
	mux.HandleFunc("POST /progress", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		mu.Lock()
		progress = string(b)
		mu.Unlock()
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	b := startChromium(t, chromium, srv.URL+"/")
	defer b.stop()
	lastProgress := func() string {
		mu.Lock()
		defer mu.Unlock()
		return progress
	}
	got := map[string]browserReport{}
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	for len(got) < len(cases) {
		select {
		case r := <-reports:
			switch {
			case r.Name == "*":
				t.Fatalf("script error on the page: %s\nChromium's log:\n%s", r.PageError, b.logTail())
			case r.Unsupported:
				t.Fatalf("hls.js finds no usable Media Source Extensions in this browser: %+v", r.Env)
			}
			got[r.Name] = r
		case <-b.exited:
			t.Fatalf("chromium exited (%v) before the page reported; it reported %d of %d cases\nChromium's log:\n%s", b.err, len(got), len(cases), b.logTail())
		case <-timer.C:
			t.Fatalf("no report of every case after %v (got %d of %d: %+v)\nthe page's last progress: %s\nChromium's log:\n%s",
				deadline, len(got), len(cases), got, lastProgress(), b.logTail())
		}
	}
	return got
}

// browser is a headless Chromium process (and its children: one process
// group) with a throwaway profile.
type browser struct {
	pid    int
	dir    string // profile, HOME and log
	exited chan struct{}
	err    error // of Wait, once exited is closed
	once   sync.Once
}

// startChromium opens u in headless Chromium. It reaches nothing but
// loopback: every host name resolves to nothing (the page and the cluster
// are named by address) and the browser's own services (updates, sync,
// metrics, media router discovery) are off.
func startChromium(t *testing.T, chromium, u string) *browser {
	t.Helper()
	dir, err := os.MkdirTemp("", "vodcluster-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "chromium.log"))
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	defer log.Close()
	args := []string{
		"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--autoplay-policy=no-user-gesture-required", "--mute-audio",
		"--user-data-dir=" + filepath.Join(dir, "profile"),
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-default-apps",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-domain-reliability", "--disable-client-side-phishing-detection", "--no-pings",
		"--metrics-recording-only", "--media-router=0",
		"--disable-features=MediaRouter,DialMediaRouteProvider,Translate,OptimizationHints",
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
		"--enable-logging=stderr", "--v=0",
		u,
	}
	// Its own temporary files (org.chromium.Chromium.*, which it leaves
	// behind) go to dir too.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	cmd := exec.Command(chromium, args...)
	cmd.Env = append(os.Environ(), "HOME="+dir, "TMPDIR="+tmp, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	b := &browser{pid: cmd.Process.Pid, dir: dir, exited: make(chan struct{})}
	go func() {
		b.err = cmd.Wait()
		close(b.exited)
	}()
	t.Cleanup(b.stop)
	return b
}

// stop ends the browser's process group (SIGTERM, SIGKILL after 5 s) and
// removes its profile once no process of the group is left (at most 5 s
// more).
func (b *browser) stop() {
	b.once.Do(func() {
		syscall.Kill(-b.pid, syscall.SIGTERM)
		select {
		case <-b.exited:
		case <-time.After(5 * time.Second):
		}
		for i := 0; i < 250 && syscall.Kill(-b.pid, 0) == nil; i++ {
			if i == 50 {
				syscall.Kill(-b.pid, syscall.SIGKILL)
			}
			time.Sleep(20 * time.Millisecond)
		}
		syscall.Kill(-b.pid, syscall.SIGKILL)
		<-b.exited
		os.RemoveAll(b.dir)
	})
}

// logTail returns the last lines of Chromium's log (its stderr: the
// page's console messages among them).
func (b *browser) logTail() string {
	s, _ := readFile(filepath.Join(b.dir, "chromium.log"))
	lines := strings.Split(s, "\n")
	var keep []string
	for _, l := range lines {
		if !strings.Contains(l, "dbus") { // no session bus here: noise
			keep = append(keep, l)
		}
	}
	if len(keep) > 60 {
		keep = keep[len(keep)-60:]
	}
	return strings.Join(keep, "\n")
}
