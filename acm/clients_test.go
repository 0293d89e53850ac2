package acm

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4"
	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/bluenviron/gortsplib/v4/pkg/conn"
)

// These tests drive the front door with real RTSP clients (ffprobe,
// gortsplib's client, GStreamer, VLC). The redirect target is a capture
// server standing in for the node: it records every request, answers
// OPTIONS 200 and anything else 404, so each client ends quickly after
// following the 302.

type captured struct {
	method base.Method
	url    string
	header base.Header
}

type captureServer struct {
	ln   net.Listener
	mu   sync.Mutex
	reqs []captured
}

func startCapture(t *testing.T) *captureServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cs := &captureServer{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				c := conn.NewConn(nc)
				for {
					nc.SetDeadline(time.Now().Add(10 * time.Second))
					req, err := c.ReadRequest()
					if err != nil {
						return
					}
					cs.mu.Lock()
					cs.reqs = append(cs.reqs, captured{req.Method, req.URL.String(), req.Header})
					cs.mu.Unlock()
					res := &base.Response{StatusCode: base.StatusNotFound, Header: base.Header{"CSeq": req.Header["CSeq"]}}
					if req.Method == base.Options {
						res.StatusCode = base.StatusOK
						res.Header["Public"] = base.HeaderValue{"OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN"}
					}
					if c.WriteResponse(res) != nil {
						return
					}
				}
			}()
		}
	}()
	return cs
}

func (cs *captureServer) addr() string { return cs.ln.Addr().String() }

// redirected returns the first DESCRIBE (or SETUP) the capture received.
func (cs *captureServer) redirected() (captured, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, r := range cs.reqs {
		if r.method == base.Describe || r.method == base.Setup {
			return r, true
		}
	}
	return captured{}, false
}

func needTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed", name)
	}
	return p
}

// runClient runs a client for at most 20 s and returns its combined output.
func runClient(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out)
}

// checkRedirect asserts the capture server got a request on the token URL
// for title, issued to 127.0.0.1 for node n1.
func (e *env) checkRedirect(cs *captureServer, title string) {
	e.t.Helper()
	var r captured
	waitFor(e.t, 10*time.Second, "the client to follow the redirect", func() (ok bool) { r, ok = cs.redirected(); return ok })
	c := e.tokenOf(r.url, "rtsp", cs.addr(), title, "")
	if c.Node != "n1" {
		e.t.Fatalf("token for node %s", c.Node)
	}
}

func TestFFprobeFollowsRedirectWithDigest(t *testing.T) {
	ffprobe := needTool(t, "ffprobe")
	e := newManager(t, "", nil)
	cs := startCapture(t)
	e.startNode("n1", nodeOpts{rtsp: cs.addr()})
	out := runClient(t, ffprobe, "-v", "debug", "-rtsp_transport", "tcp", "rtsp://demo:demo@"+e.m.RTSPAddr()+"/vod/t1")
	e.checkRedirect(cs, "t1")
	if u := e.users.used(); len(u) != 1 || u[0] != "digest-qop" {
		t.Fatalf("ffprobe authenticated with %v, want Digest with qop=auth\n%s", u, out)
	}
	if len(e.sessions()) != 1 {
		t.Fatalf("sessions %v", e.sessions())
	}
}

func TestFFprobeWrongPassword401(t *testing.T) {
	ffprobe := needTool(t, "ffprobe")
	e := newManager(t, "", nil)
	cs := startCapture(t)
	e.startNode("n1", nodeOpts{rtsp: cs.addr()})
	out := runClient(t, ffprobe, "-v", "error", "rtsp://demo:wrong@"+e.m.RTSPAddr()+"/vod/t1")
	if !strings.Contains(out, "401 Unauthorized") {
		t.Fatalf("ffprobe with a wrong password:\n%s", out)
	}
	if _, ok := cs.redirected(); ok || len(e.sessions()) != 0 || e.reserved("n1") != 0 {
		t.Fatal("a wrong password was admitted")
	}
	out = runClient(t, ffprobe, "-v", "error", "rtsp://kid:kid@"+e.m.RTSPAddr()+"/vod/adult-1")
	if !strings.Contains(out, "403 Forbidden") {
		t.Fatalf("ffprobe outside the packages:\n%s", out)
	}
	out = runClient(t, ffprobe, "-v", "error", "rtsp://demo:demo@"+e.m.RTSPAddr()+"/vod/missing")
	if !strings.Contains(out, "404 Not Found") {
		t.Fatalf("ffprobe unknown title:\n%s", out)
	}
}

func TestGortsplibClientFollowsRedirect(t *testing.T) {
	e := newManager(t, "", nil)
	cs := startCapture(t)
	e.startNode("n1", nodeOpts{rtsp: cs.addr()})
	u, err := base.ParseURL("rtsp://demo:demo@" + e.m.RTSPAddr() + "/vod/t2")
	if err != nil {
		t.Fatal(err)
	}
	c := gortsplib.Client{Scheme: u.Scheme, Host: u.Host}
	if err := c.Start2(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, res, err := c.Describe(u)
	if err == nil || res == nil || res.StatusCode != base.StatusNotFound {
		t.Fatalf("describe through the redirect: %v %v", res, err) // the capture answers 404
	}
	e.checkRedirect(cs, "t2")
	t.Logf("gortsplib authenticated with %v", e.users.used())
}

func TestGStreamerFollowsRedirect(t *testing.T) {
	gst := needTool(t, "gst-launch-1.0")
	e := newManager(t, "", nil)
	cs := startCapture(t)
	e.startNode("n1", nodeOpts{rtsp: cs.addr()})
	out := runClient(t, gst, "-q", "rtspsrc", "location=rtsp://"+e.m.RTSPAddr()+"/vod/t1", "user-id=demo", "user-pw=demo",
		"protocols=tcp", "!", "fakesink")
	if _, ok := cs.redirected(); !ok {
		t.Logf("gst-launch output:\n%s", out)
	}
	e.checkRedirect(cs, "t1")
	t.Logf("GStreamer authenticated with %v", e.users.used())
	if u := e.users.used(); len(u) != 1 || !strings.HasPrefix(u[0], "digest") {
		t.Fatalf("GStreamer authenticated with %v, want Digest", u)
	}
}

// vlcCommand returns how to run cvlc with args (as nobody when root: VLC
// refuses to run as root).
func vlcCommand(t *testing.T, args ...string) (string, []string) {
	t.Helper()
	cvlc := needTool(t, "cvlc")
	args = append([]string{"-I", "dummy", "--play-and-exit", "--run-time=5"}, args...)
	if os.Geteuid() != 0 {
		return cvlc, args
	}
	runuser, err := exec.LookPath("runuser")
	if err != nil {
		t.Skip("cvlc refuses root and runuser is missing")
	}
	return runuser, append([]string{"-u", "nobody", "--", cvlc}, args...)
}

func TestVLCFollowsRedirect(t *testing.T) {
	name, args := vlcCommand(t, "--list")
	if out := runClient(t, name, args...); !strings.Contains(out, "live555") {
		// Debian's VLC ships no live555 module, so it has no RTSP
		// client (only SAT>IP); HTTP is covered by TestVLCFollowsHTTPRedirect.
		t.Skip("this VLC has no live555 RTSP client module")
	}
	e := newManager(t, "", nil)
	cs := startCapture(t)
	e.startNode("n1", nodeOpts{rtsp: cs.addr()})
	name, args = vlcCommand(t, "--rtsp-tcp", "rtsp://demo:demo@"+e.m.RTSPAddr()+"/vod/t3")
	out := runClient(t, name, args...)
	if _, ok := cs.redirected(); !ok {
		t.Logf("vlc output:\n%s", out)
	}
	e.checkRedirect(cs, "t3")
}

func TestVLCFollowsHTTPRedirect(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer node.Close()
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{http: node.Listener.Addr().String()})
	name, args := vlcCommand(t, "http://demo:demo@"+e.m.HTTPAddr()+"/vod/t1.ts")
	out := runClient(t, name, args...)
	var got string
	waitFor(t, 10*time.Second, "VLC to follow the HTTP redirect", func() bool {
		mu.Lock()
		defer mu.Unlock()
		if len(paths) > 0 {
			got = paths[0]
		}
		return got != ""
	})
	if !strings.HasSuffix(got, "/vod/t1.ts") {
		t.Fatalf("VLC asked the node for %q\n%s", got, out)
	}
	e.tokenOf("http://"+node.Listener.Addr().String()+got, "http", node.Listener.Addr().String(), "t1", ".ts")
}
