package acm

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	pb "vodcluster/proto/vodcluster/v1"
)

// A subscriber cannot hold more than MaxSessionsPerUser sessions: each
// admitted request reserves bandwidth until its client shows up or the
// no-show deadline passes.
func TestSessionLimitPerSubscriber(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.MaxSessionsPerUser = 2 })
	n := e.startNode("n1", nodeOpts{})
	a := e.admitOne("t1")
	e.admitOne("t2")
	res := e.describe("demo", "demo", "t1")
	// vodctl play's hint (cmd/internal/probe) keys on the reason; neither
	// viewer reached its node: the reason says so, and when one ends.
	if res.StatusCode != base.StatusForbidden || !strings.HasPrefix(res.StatusMessage, "Forbidden (too many sessions: 2 of 2 not started, one ends within ") {
		t.Fatalf("third session: %d %q, want 403 (too many sessions), 2 not started", res.StatusCode, res.StatusMessage)
	}
	if got := e.reserved("n1"); got != 2*titleBps {
		t.Fatalf("the refused request reserved: %d", got)
	}
	// Over HTTP the same limit is 429.
	req, _ := http.NewRequest(http.MethodGet, "http://"+e.m.HTTPAddr()+"/vod/t1.ts", nil)
	req.SetBasicAuth("demo", "demo")
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("HTTP over the limit: %s, want 429", resp.Status)
	}
	// When one session ends, the subscriber may start another.
	if err := n.event(a, pb.SessionEvent_KIND_ENDED); err != nil {
		t.Fatal(err)
	}
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("after an end: %d, want 302", res.StatusCode)
	}
}

// Requests waiting in the admission queue count against the subscriber's
// session limit: while the cluster is full one account cannot queue more
// requests than its limit and take every slot that frees up.
func TestSessionLimitCountsQueuedRequests(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.MaxSessionsPerUser = 2; m.QueueDeadline = 30 * time.Second })
	e.startNode("n1", nodeOpts{egress: titleBps})
	noFollow := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	get := func(user, title string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+e.m.HTTPAddr()+"/vod/"+title+".ts", nil)
		req.SetBasicAuth(user, user)
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}, CheckRedirect: noFollow}).Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get("kid", "t1"); c != http.StatusFound { // the node is full
		t.Fatalf("kid: %d", c)
	}
	const n = 6
	codes := make(chan int, n)
	for range n {
		go func() { codes <- get("demo", "t2") }()
	}
	tooMany := 0
	for range n - 2 {
		if c := <-codes; c == http.StatusTooManyRequests {
			tooMany++
		} else {
			t.Errorf("a request beyond the limit got %d while two wait, want 429", c)
		}
	}
	waitFor(t, 5*time.Second, "two requests queued", func() bool { return e.queued() == 2 })
	// Room for many: the node registers again with more egress.
	if _, err := e.nc.Register(context.Background(), &pb.RegisterRequest{NodeId: "n1", RtspAddr: "127.0.0.1:1", HttpAddr: "127.0.0.1:2",
		Capacity: &pb.NodeCapacity{EgressBps: 20 * titleBps, DiskBytes: 1 << 40}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if c := <-codes; c != http.StatusFound {
			t.Errorf("a queued request got %d, want 302", c)
		}
	}
	held := 0
	for _, s := range e.sessions() {
		if s.User == "demo" {
			held++
		}
	}
	if held != 2 || tooMany != n-2 {
		t.Fatalf("demo holds %d sessions (limit 2), %d requests refused with 429 (want %d)", held, tooMany, n-2)
	}
}

// userLimitAnswer asks e's front door for title as demo over HTTP and
// returns the answer's Retry-After values and body, failing unless it is
// 429.
func userLimitAnswer(t *testing.T, e *env, title string) ([]string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+e.m.HTTPAddr()+"/vod/"+title+".ts", nil)
	req.SetBasicAuth("demo", "demo")
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("%s, want 429", resp.Status)
	}
	return resp.Header.Values("Retry-After"), string(body)
}

// The HTTP 429 of a subscriber at its session limit says, in a sentence
// or two, what the subscriber holds and what frees a slot. Sessions whose
// players have not reached their node (a player, or curl, that asked
// again and again) end at their no-show, token_ttl + 10 s after their
// redirect: the 429 says so, with the Retry-After of the first such end,
// and the RTSP 403 the same; it said "none of them idle; stop playing on
// another device first". Sessions started carry no Retry-After (no time
// is known at which one ends) and say what ends one.
func TestHTTPUserLimitAnswer(t *testing.T) {
	e := newManager(t, "", func(m *Manager) {
		m.MaxSessionsPerUser = 2
		m.TokenTTL, m.NoShowGrace = 50*time.Second, 10*time.Second
	})
	n := e.startNode("n1", nodeOpts{})
	a := e.admitOne("t1")
	b := e.admitOne("t2")

	ra, body := userLimitAnswer(t, e, "t3")
	if len(ra) != 1 {
		t.Fatalf("Retry-After %v with both sessions not started: want the time of the first no-show", ra)
	}
	retryAfterIn(t, "both not started", ra, 55, 62) // 60 s after the redirects, and the tick that ends them
	for _, want := range []string{"demo holds 2 sessions, the most allowed at once (max_sessions_per_user 2)",
		"none started", "ends 1m after it unless the player arrives", "(Retry-After: " + ra[0] + ")"} {
		if !strings.Contains(body, want) {
			t.Errorf("body %q lacks %q", body, want)
		}
	}
	for _, not := range []string{"stop playing", "idle", "session_timeout"} {
		if strings.Contains(body, not) {
			t.Errorf("body %q says %q: the sessions are redirects not taken up", body, not)
		}
	}
	if res := e.describe("demo", "demo", "t3"); res.StatusCode != base.StatusForbidden ||
		!strings.HasPrefix(res.StatusMessage, "Forbidden (too many sessions: 2 of 2 not started, one ends within ") {
		t.Errorf("RTSP: %d %q, want 403 saying the 2 sessions are not started and when one ends", res.StatusCode, res.StatusMessage)
	}

	// One started: the other still ends at its no-show.
	if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	ra, body = userLimitAnswer(t, e, "t3")
	retryAfterIn(t, "one not started", ra, 55, 62)
	if want := "1 of them not started"; !strings.Contains(body, want) {
		t.Errorf("body %q lacks %q", body, want)
	}

	// Both started: no time is known.
	if err := n.event(b, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	ra, body = userLimitAnswer(t, e, "t3")
	if len(ra) != 0 {
		t.Fatalf("Retry-After %v with both sessions started: no time is known", ra)
	}
	for _, want := range []string{"demo holds 2 sessions", "all started on their nodes", "Stop a player first",
		"longer than its node's session_timeout"} { // not "a minute": session_timeout is the node's setting
		if !strings.Contains(body, want) {
			t.Errorf("body %q lacks %q", body, want)
		}
	}
	if n := strings.Count(body, ". "); n > 1 {
		t.Errorf("body %q: %d sentences, want two at most", body, n+1)
	}
	if res := e.describe("demo", "demo", "t3"); res.StatusCode != base.StatusForbidden || res.StatusMessage != "Forbidden (too many sessions)" {
		t.Errorf("RTSP, both started: %d %q, want 403 (too many sessions)", res.StatusCode, res.StatusMessage)
	}
}

// Sessions a restarted manager loaded from its store, their node not
// registered with it since, never end as no-shows (their node may play
// them): they end restore_grace after the start unless the node
// registers. The 429 counted them as redirects not taken up, ending at
// their no-show (token_ttl + 1 s after their redirect, long past): it
// said Retry-After: 1 and, over RTSP, "one ends within 1 s", again and
// again for the whole restore_grace. It now gives their end.
func TestUserLimitRestoredSessionsEndAtRestoreGrace(t *testing.T) {
	dir := t.TempDir()
	e := newManager(t, dir, func(m *Manager) { m.MaxSessionsPerUser = 2 })
	e.startNode("n1", nodeOpts{})
	e.admitOne("t1")
	e.admitOne("t2")
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e = newManager(t, dir, func(m *Manager) {
		m.MaxSessionsPerUser = 2
		m.TokenTTL, m.NoShowGrace, m.RestoreGrace = 2*time.Second, time.Second, 60*time.Second
	})
	ra, body := userLimitAnswer(t, e, "t3")
	retryAfterIn(t, "two sessions loaded, their node not registered", ra, 55, 62) // restore_grace after the start, and the tick
	for _, want := range []string{"demo holds 2 sessions", "2 of them on a node not registered with this manager since it started",
		"(Retry-After: " + ra[0] + "), when a session on a node not registered with this manager since it started ends."} {
		if !strings.Contains(body, want) {
			t.Errorf("body %q lacks %q", body, want)
		}
	}
	if strings.Contains(body, "not started") {
		t.Errorf("body %q counts the loaded sessions as redirects not taken up", body)
	}
	if res := e.describe("demo", "demo", "t3"); res.StatusCode != base.StatusForbidden || strings.Contains(res.StatusMessage, "ends within") {
		t.Errorf("RTSP: %d %q, want 403 without a no-show's end", res.StatusCode, res.StatusMessage)
	}
}

// A session its node lists quiet, its STARTED not applied yet (a node
// lists a session before it reports it STARTED), is counted once, as
// giving way soon: it was counted a redirect not taken up as well
// ("none started").
func TestUserLimitQuietSessionNotCountedAsARedirect(t *testing.T) {
	e := newManager(t, "", func(m *Manager) {
		m.MaxSessionsPerUser = 2
		m.TokenTTL, m.NoShowGrace = 50*time.Second, 10*time.Second
	})
	n := e.startNode("n1", nodeOpts{})
	mine := func(title string) string {
		t.Helper()
		code, sid := e.httpAdmitFrom("127.0.0.1", title)
		if code != http.StatusFound {
			t.Fatalf("HTTP %s: %d", title, code)
		}
		return sid
	}
	quiet := mine("t1")
	mine("t2")
	n.setQuiet(quiet, 9)
	e.awaitReports("n1")
	res, body := e.httpAskFrom("127.0.0.1", "t3")
	if res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("%d, want 429", res.StatusCode)
	}
	retryAfterIn(t, "a session quiet 9 s", res.Header.Values("Retry-After"), 1, 3)
	if want := "1 of them not started"; !strings.Contains(body, want) {
		t.Errorf("body %q lacks %q: the quiet session counted as a redirect not taken up", body, want)
	}
}
