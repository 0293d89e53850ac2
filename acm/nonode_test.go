package acm

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// getBody is e.get that also returns the body.
func (e *env) getBody(path, user, pass string) (*http.Response, string) {
	e.t.Helper()
	req, err := http.NewRequest("GET", "http://"+e.m.HTTPAddr()+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.SetBasicAuth(user, pass)
	res, err := noRedirect.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return res, string(b)
}

// A manager active for restore_grace that knows no node (none started,
// or none reaching it) refuses a viewer at once, RTSP 503 and HTTP 503
// with Retry-After, saying no node reports to it, rather than after the
// queue deadline with 453 as if the nodes were full; it counts the
// refusals as no_capacity and logs, at warn, what the operator should
// check.
func TestNoNodeRefusedAtOnce(t *testing.T) {
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		m.QueueDeadline = 20 * time.Second
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	e.settled()
	count := func(proto string) float64 {
		return testutil.ToFloat64(requestsTotal.WithLabelValues(proto, outcomeNoCapacity))
	}
	rtspBefore, httpBefore := count("rtsp"), count("http")
	start := time.Now()
	res := e.describe("demo", "demo", "t1")
	if res.StatusCode != base.StatusServiceUnavailable || res.StatusMessage != "Service Unavailable (no node is reporting to the manager)" ||
		len(res.Header["Retry-After"]) != 1 || res.Header["Retry-After"][0] != "20" {
		t.Fatalf("RTSP with no node: %d %q, Retry-After %v", res.StatusCode, res.StatusMessage, res.Header["Retry-After"])
	}
	hres, body := e.getBody("/vod/t1.ts", "demo", "demo")
	if hres.StatusCode != http.StatusServiceUnavailable || hres.Header.Get("Retry-After") != "20" ||
		!strings.Contains(body, "no node is reporting to the manager") {
		t.Fatalf("HTTP with no node: %d, Retry-After %q, %q", hres.StatusCode, hres.Header.Get("Retry-After"), body)
	}
	if waited := time.Since(start); waited > e.m.QueueDeadline/2 {
		t.Fatalf("refused after %v: waited for the queue deadline %v", waited, e.m.QueueDeadline)
	}
	if e.queued() != 0 || len(e.sessions()) != 0 {
		t.Fatal("a refusal left state behind")
	}
	if r, h := count("rtsp")-rtspBefore, count("http")-httpBefore; r != 1 || h != 1 {
		t.Fatalf("no_capacity counted %v over RTSP, %v over HTTP; want 1 and 1", r, h)
	}
	for _, want := range []string{"level=WARN", "no node is registered with the manager", "start the nodes", "NodeControl address " + e.m.GRPCAddr()} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log.String())
		}
	}
	if strings.Contains(log.String(), "no bandwidth") {
		t.Errorf("the log calls it no bandwidth:\n%s", log.String())
	}
	e.startNode("n1", nodeOpts{})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("n1 registered: %d", res.StatusCode)
	}
}

// Right after the manager starts, its nodes may still be registering:
// with none yet, the request waits out the queue deadline, and is then
// told no node is reporting (503 with Retry-After), not 453 as if the
// nodes were full.
func TestNoNodeRightAfterStartWaits(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.QueueDeadline = 500 * time.Millisecond }) // restore_grace 30 s
	res := e.awaitWaitedOut(t, "no node, the manager just started", base.StatusServiceUnavailable)
	if !strings.Contains(res.StatusMessage, "no node is reporting") || len(res.Header["Retry-After"]) != 1 {
		t.Fatalf("no node, the manager just started: %q, Retry-After %v", res.StatusMessage, res.Header["Retry-After"])
	}
}

// awaitWaitedOut checks that a DESCRIBE of t1 by demo waits out e's queue
// deadline and is then refused with status want (what is named in the
// failure), and returns the answer.
func (e *env) awaitWaitedOut(t *testing.T, what string, want base.StatusCode) *base.Response {
	t.Helper()
	start := time.Now()
	res := e.describe("demo", "demo", "t1")
	if res.StatusCode != want {
		t.Fatalf("%s: %d %q, want %d after the queue deadline", what, res.StatusCode, res.StatusMessage, want)
	}
	if waited := time.Since(start); waited < e.m.QueueDeadline {
		t.Fatalf("%s: refused after %v, before the queue deadline", what, waited)
	}
	return res
}

// A request waiting for the only node, full, is refused as soon as the
// operator forgets that node (dead): no node reports to the manager any
// more.
func TestForgetLastNodeRefusesTheWaiting(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.QueueDeadline = 20 * time.Second })
	n1 := e.startNode("n1", nodeOpts{egress: titleBps})
	e.admitOne("t1")
	e.settled()
	got := make(chan *base.Response, 1)
	start := time.Now()
	go func() { got <- e.describe("demo", "demo", "t2") }()
	waitFor(t, 5*time.Second, "the request to queue for the full node", func() bool { return e.queued() == 1 })
	n1.stop()
	waitFor(t, 5*time.Second, "n1 dead", func() bool { return !e.nodeInfo("n1").Alive })
	if len(got) > 0 {
		t.Fatalf("n1 dead within restore_grace: refused %d", (<-got).StatusCode)
	}
	if _, err := e.admin.ForgetNode(context.Background(), &pb.ForgetNodeRequest{NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-got:
		if res.StatusCode != base.StatusServiceUnavailable || !strings.Contains(res.StatusMessage, "no node is reporting") || len(res.Header["Retry-After"]) != 1 {
			t.Fatalf("waiting request after the forget: %d %q, Retry-After %v", res.StatusCode, res.StatusMessage, res.Header["Retry-After"])
		}
		if waited := time.Since(start); waited > e.m.QueueDeadline/2 {
			t.Fatalf("refused after %v: waited for the queue deadline", waited)
		}
	case <-time.After(e.m.QueueDeadline / 2):
		t.Fatal("the waiting request still waits after the last node was forgotten")
	}
	if e.queued() != 0 {
		t.Fatalf("queued %d", e.queued())
	}
}
