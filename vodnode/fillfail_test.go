package vodnode

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"vodcluster/proto/token"
	pb "vodcluster/proto/vodcluster/v1"
)

// authOrigin serves o over loopback gRPC as the CDP does with a
// secret_file: every Origin call must carry the bearer credential of the
// origin's cluster secret (token.OriginCredential). The secret starts as
// the node's (testSecret); setSecret gives the origin another, as an
// origin restarted with another secret_file, which then refuses the
// node's calls UNAUTHENTICATED. A Fetch refused waits for gate first, when
// one is set (a refusal that comes once the viewer is playing).
type authOrigin struct {
	cred atomic.Pointer[string]
	gate atomic.Pointer[chan struct{}]
}

func startAuthOrigin(t testing.TB, o *fakeOrigin) (string, *authOrigin) {
	t.Helper()
	a := &authOrigin{}
	a.setSecret(testSecret)
	check := func(ctx context.Context, method string) error {
		err := token.CheckBearer(ctx, *a.cred.Load())
		if g := a.gate.Load(); err != nil && g != nil && method == "/vodcluster.v1.Origin/Fetch" {
			<-*g
		}
		return err
	}
	addr := serveGRPCWith(t, token.Authorize(check), func(s *grpc.Server) { pb.RegisterOriginServer(s, o) })
	return addr, a
}

func (a *authOrigin) setSecret(secret []byte) {
	c := token.OriginCredential(secret)
	a.cred.Store(&c)
}

// serveGRPCWith is serveGRPC with server options.
func serveGRPCWith(t testing.TB, opts []grpc.ServerOption, register func(*grpc.Server)) string {
	t.Helper()
	opts = append(opts, grpc.KeepaliveEnforcementPolicy(pb.KeepaliveEnforcement))
	s := grpc.NewServer(opts...)
	register(s)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return l.Addr().String()
}

// cacheCatalog has n read the origin's catalog (as a viewer's request of
// another title would), so that title's entry is known when the origin
// then refuses the node.
func cacheCatalog(t testing.TB, n *Node, title string) {
	t.Helper()
	if _, err := n.store.Lookup(context.Background(), title); err != nil {
		t.Fatal(err)
	}
}

// TestHTTPFillFailedBeforeItsFirstByte: a progressive download whose
// title's fill fails before any byte of it came (the origin refuses the
// node's credential, no longer has the title, or refuses it for now) is
// answered 503 "title unavailable" in plain text, with Retry-After only
// where a retry could succeed, not 200 and then nothing; its session ends
// at once, reported ENDED "fill failed: <cause>" with no byte and at its
// start (the session record's played_s 0). A fill that fails after bytes
// were sent still cuts the answer short and leaves the session live.
func TestHTTPFillFailedBeforeItsFirstByte(t *testing.T) {
	o := newFakeOrigin(t)
	addr, auth := startAuthOrigin(t, o)
	m, maddr := startFastManager(t)
	n := startNode(t, addr, withHTTP, func(n *Node) { n.ManagerAddr = maddr; n.FillRetryFor = 300 * time.Millisecond })
	for _, tc := range []struct {
		name, title, sid, rng, cause string
		retry                        bool
		fail, undo                   func()
	}{
		{name: "origin refuses the node's credential", title: "sample-004", sid: "ff-unauth", cause: "origin",
			fail: func() { auth.setSecret([]byte("another-cluster-secret-0123456789")) },
			undo: func() { auth.setSecret(testSecret) }},
		{name: "origin no longer has the title", title: "sample-005", sid: "ff-gone", rng: "bytes=100000-", cause: "not_found",
			fail: func() { o.mu.Lock(); delete(o.titles, "sample-005"); o.mu.Unlock() }, undo: func() {}},
		{name: "title being replaced at the origin", title: "sample-006", sid: "ff-replaced", cause: "replaced", retry: true,
			fail: func() { o.replaced.Store(true) }, undo: func() { o.replaced.Store(false) }},
	} {
		cacheCatalog(t, n, tc.title)
		tc.fail()
		var hdr []string
		if tc.rng != "" {
			hdr = []string{"Range", tc.rng}
		}
		res, body := get(t, httpURL(n, mint(t, tc.sid, tc.title, "node-1", "", time.Minute), tc.title+".ts"), hdr...)
		tc.undo()
		if res.StatusCode != http.StatusServiceUnavailable || !strings.HasPrefix(string(body), "title unavailable: ") ||
			!strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("%s: %d %q (%s), want 503 title unavailable in plain text", tc.name, res.StatusCode, body, res.Header.Get("Content-Type"))
		}
		// What failed, in words: not the origin's gRPC error (file
		// times, versions), which the node's log has.
		if b := string(body); strings.Contains(b, "rpc error") || strings.Contains(b, "code =") || !strings.Contains(b, "its fill failed: ") {
			t.Errorf("%s: body %q, want what failed in words, without the origin's error", tc.name, b)
		}
		if ra := res.Header.Get("Retry-After"); (ra == "5") != tc.retry || res.Header.Get("Content-Range") != "" {
			t.Errorf("%s: Retry-After %q, Content-Range %q; want Retry-After only where a retry may succeed (%v), no range",
				tc.name, ra, res.Header.Get("Content-Range"), tc.retry)
		}
		waitFor(t, 10*time.Second, tc.name+": ENDED", func() bool { return m.event(tc.sid, pb.SessionEvent_KIND_ENDED) != nil })
		st, e := m.event(tc.sid, pb.SessionEvent_KIND_STARTED), m.event(tc.sid, pb.SessionEvent_KIND_ENDED)
		if e.GetReason() != "fill failed: "+tc.cause || e.GetBytesSent() != 0 || st == nil || e.GetAtUnixMs() != st.GetAtUnixMs() {
			t.Errorf("%s: ENDED %v after STARTED %v, want reason fill failed: %s, no byte, at the start", tc.name, e, st, tc.cause)
		}
		if s := n.Stats().Sessions; s != 0 {
			t.Errorf("%s: %d sessions live after the fill failed", tc.name, s)
		}
	}

	// An HLS viewer's session ends so too (its playlist was 503 already).
	auth.setSecret([]byte("another-cluster-secret-0123456789"))
	cacheCatalog(t, n, "sample-009")
	res, body := get(t, httpURL(n, mint(t, "ff-hls", "sample-009", "node-1", "", time.Minute), "sample-009/index.m3u8"))
	auth.setSecret(testSecret)
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "" {
		t.Fatalf("playlist of a title the origin refuses the node: %d %q (Retry-After %q), want 503 without Retry-After",
			res.StatusCode, body, res.Header.Get("Retry-After"))
	}
	waitFor(t, 10*time.Second, "HLS ENDED", func() bool { return m.event("ff-hls", pb.SessionEvent_KIND_ENDED) != nil })
	if st, e := m.event("ff-hls", pb.SessionEvent_KIND_STARTED), m.event("ff-hls", pb.SessionEvent_KIND_ENDED); e.GetReason() != "fill failed: origin" || e.GetAtUnixMs() != st.GetAtUnixMs() {
		t.Errorf("HLS: ENDED %v after STARTED %v, want fill failed: origin at the start", e, st)
	}

	// A real player hears it too.
	if _, err := exec.LookPath("ffprobe"); err == nil {
		auth.setSecret([]byte("another-cluster-secret-0123456789"))
		cacheCatalog(t, n, "sample-007")
		url := httpURL(n, mint(t, "ff-probe", "sample-007", "node-1", "", time.Minute), "sample-007.ts")
		out, _ := exec.Command("ffprobe", "-v", "error", url).CombinedOutput()
		auth.setSecret(testSecret)
		if !strings.Contains(string(out), "5XX") { // ffprobe: "Server returned 5XX Server Error reply"
			t.Errorf("ffprobe of a title whose fill failed: %q, want the 5XX", out)
		}
	}

	// A fill failing a quarter into the title: the download gets the
	// bytes before (200, cut short there), its session lives on.
	data := o.titles["sample-008"]
	o.failAt.Store(int64(len(data)/4) / 188 * 188)
	res, body = get(t, httpURL(n, mint(t, "ff-mid", "sample-008", "node-1", "", time.Minute), "sample-008.ts"))
	if res.StatusCode != http.StatusOK || len(body) == 0 || len(body) >= len(data) {
		t.Fatalf("download of a title whose fill fails mid-way: %d, %d of %d bytes", res.StatusCode, len(body), len(data))
	}
	if s := n.Stats().Sessions; s != 1 || m.event("ff-mid", pb.SessionEvent_KIND_ENDED) != nil {
		t.Errorf("after a fill failing mid-way: %d sessions, ENDED %v; want the session live", s, m.event("ff-mid", pb.SessionEvent_KIND_ENDED))
	}
}

// TestRTSPFillFailedBeforeItsFirstByte: an RTSP viewer whose title's fill
// fails before any byte of it came gets 503 to its PLAY when the failure
// is known then, and its session ends at once, reported ENDED "fill
// failed: origin" without STARTED (played_s 0); one already playing when
// the fill fails gets its RTCP BYE as before, and its session, which was
// sent none of the title, is reported ENDED "fill failed: origin" at its
// start, not as having played until then.
func TestRTSPFillFailedBeforeItsFirstByte(t *testing.T) {
	m, n, auth := nodeWithRefusingOrigin(t)

	// Failed before the PLAY.
	c := dialRTSP(t, n)
	url := nodeURL(n, mint(t, "rf-before", "sample-004", "node-1", "", time.Minute), "sample-004")
	res := c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	id := sessionID(res)
	waitFor(t, 5*time.Second, "the fill refused", func() bool { return n.store.FillsFailed()["origin"] == 1 })
	if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=0.000-"); res.StatusCode != 503 || retryAfterOf(res) != "" {
		// the origin refuses the node's credential: no retry succeeds soon
		t.Fatalf("PLAY of a title whose fill failed before its first byte: %s, Retry-After %q; want 503 without it", statusLine(res), retryAfterOf(res))
	}
	waitFor(t, 10*time.Second, "ENDED", func() bool { return m.event("rf-before", pb.SessionEvent_KIND_ENDED) != nil })
	if e := m.event("rf-before", pb.SessionEvent_KIND_ENDED); e.GetReason() != "fill failed: origin" ||
		m.event("rf-before", pb.SessionEvent_KIND_STARTED) != nil || n.lookupSession(id) != nil {
		t.Errorf("ENDED %v, STARTED %v, session live %v: want it ended at once for the fill, never started",
			e, m.event("rf-before", pb.SessionEvent_KIND_STARTED), n.lookupSession(id) != nil)
	}
	if res := c.do("TEARDOWN", url+"/", "Session", id); res.StatusCode != 454 {
		t.Errorf("TEARDOWN of the session ended: %s, want 454", statusLine(res))
	}

	// Failing while it plays, before its first byte.
	gate := make(chan struct{})
	auth.gate.Store(&gate)
	c2 := dialRTSP(t, n)
	c2.play(nodeURL(n, mint(t, "rf-playing", "sample-004", "node-1", "", time.Minute), "sample-004"))
	waitFor(t, 5*time.Second, "STARTED", func() bool { return m.event("rf-playing", pb.SessionEvent_KIND_STARTED) != nil })
	close(gate)
	waitFor(t, 10*time.Second, "ENDED", func() bool { return m.event("rf-playing", pb.SessionEvent_KIND_ENDED) != nil })
	st, e := m.event("rf-playing", pb.SessionEvent_KIND_STARTED), m.event("rf-playing", pb.SessionEvent_KIND_ENDED)
	if e.GetReason() != "fill failed: origin" || e.GetAtUnixMs() != st.GetAtUnixMs() {
		t.Errorf("ENDED %v after STARTED %v, want reason fill failed: origin at the start", e, st)
	}
}

// TestESDescribeFillFailed: an elementary-stream DESCRIBE, which waits
// for the title's PMT and parameter sets, of a title whose fill fails
// before them is answered 503, not 415 (nor an SDP without them), and the
// admission session ends (ENDED, refused, never started).
func TestESDescribeFillFailed(t *testing.T) {
	m, n, _ := nodeWithRefusingOrigin(t)
	c := dialRTSP(t, n)
	url := nodeURL(n, mint(t, "es-fail", "sample-004", "node-1", "", time.Minute), "sample-004") + "/es"
	res := c.do("DESCRIBE", url, "Accept", "application/sdp")
	if res.StatusCode != 503 || !strings.Contains(string(res.Body), "title unavailable") {
		t.Fatalf("ES DESCRIBE of a title whose fill failed: %s %q, want 503 title unavailable", statusLine(res), res.Body)
	}
	waitFor(t, 10*time.Second, "ENDED", func() bool { return m.event("es-fail", pb.SessionEvent_KIND_ENDED) != nil })
	if e := m.event("es-fail", pb.SessionEvent_KIND_ENDED); !strings.HasPrefix(e.GetReason(), "refused: 503") {
		t.Errorf("ENDED %v, want refused: 503", e)
	}
}

// nodeWithRefusingOrigin starts a manager and a node whose origin refuses
// its credential from now on (another cluster secret), sample-004 in the
// node's catalog cache: its fill fails before any byte.
func nodeWithRefusingOrigin(t *testing.T) (*fakeManager, *Node, *authOrigin) {
	o := newFakeOrigin(t)
	addr, auth := startAuthOrigin(t, o)
	m, maddr := startFastManager(t)
	n := startNode(t, addr, func(n *Node) { n.ManagerAddr = maddr })
	cacheCatalog(t, n, "sample-004")
	auth.setSecret([]byte("another-cluster-secret-0123456789"))
	return m, n, auth
}
