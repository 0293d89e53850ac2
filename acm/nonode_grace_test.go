package acm

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/proto/logtest"
)

// noNodeRefusal waits for the answer of a request that waits (got), at
// most within (well under the queue deadline), and checks it is the
// refusal for no node reporting.
func noNodeRefusal(t *testing.T, got <-chan *base.Response, within time.Duration, what string) {
	t.Helper()
	select {
	case res := <-got:
		if res.StatusCode != base.StatusServiceUnavailable || !strings.Contains(res.StatusMessage, "no node is reporting") || len(res.Header["Retry-After"]) != 1 {
			t.Fatalf("%s: %d %q, Retry-After %v", what, res.StatusCode, res.StatusMessage, res.Header["Retry-After"])
		}
	case <-time.After(within):
		t.Fatalf("%s: the request still waits %v on (queue deadline 20s)", what, within)
	}
}

// A request that starts waiting in the manager's first restore_grace,
// no node registering, is refused as soon as that grace runs out, not
// after the queue deadline with 453 as if the nodes were full.
func TestNoNodeGraceRunsOutWhileWaiting(t *testing.T) {
	e := newManager(t, "", func(m *Manager) {
		m.QueueDeadline, m.RestoreGrace = 20*time.Second, 2*time.Second
	})
	got := make(chan *base.Response, 1)
	go func() { got <- e.describe("demo", "demo", "t1") }()
	waitFor(t, 5*time.Second, "the request to queue", func() bool { return e.queued() == 1 })
	e.m.mu.Lock()
	settled := e.m.nodesSettledLocked(e.m.now())
	e.m.mu.Unlock()
	if settled || len(got) > 0 {
		t.Fatal("refused, or settled, before restore_grace ran out")
	}
	noNodeRefusal(t, got, 8*time.Second, "restore_grace over, no node")
	if e.queued() != 0 {
		t.Fatalf("queued %d", e.queued())
	}
}

// A request that starts waiting while the only node is dead within
// restore_grace (it may come back; no session of it left to end) is
// refused once that grace is over, with no operator forgetting the node.
func TestLastNodeDeadBeyondGraceRefusesTheWaiting(t *testing.T) {
	e := newManager(t, "", func(m *Manager) {
		m.QueueDeadline, m.RestoreGrace = 20*time.Second, 3*time.Second
	})
	n1 := e.startNode("n1", nodeOpts{})
	e.settled()
	n1.stop()
	waitFor(t, 5*time.Second, "n1 dead", func() bool { return !e.nodeInfo("n1").Alive })
	got := make(chan *base.Response, 1)
	go func() { got <- e.describe("demo", "demo", "t1") }()
	waitFor(t, 5*time.Second, "the request to queue", func() bool { return e.queued() == 1 })
	if len(got) > 0 {
		t.Fatalf("n1 dead within restore_grace: refused %d", (<-got).StatusCode)
	}
	noNodeRefusal(t, got, 10*time.Second, "the last node dead beyond restore_grace")
}

// A standby serves the front door only once the address moved to it
// before its nodes did (they report to the active manager, and follow):
// however long it has run, it does not refuse a request for want of a
// node; the request waits for them (here, out the queue deadline). The
// refusal's log says it is a standby no node reports to and what to
// check; it said "no node is in service ... none has registered yet", as
// on an active manager just started. The viewer is told so too, RTSP and
// HTTP 503 with Retry-After (it was told 453 and "not enough bandwidth",
// as if the nodes were full, while the log said no node reports).
func TestStandbyWithoutNodesWaits(t *testing.T) {
	open, _ := sharedRedis(t)
	var log logtest.Buffer
	started := 0
	_, b := activeAndStandby(t, open, testTitles, func(m *Manager) {
		m.QueueDeadline = 300 * time.Millisecond
		if started++; started == 2 { // the standby
			m.Logger = slog.New(slog.NewTextHandler(&log, nil))
		}
	})
	b.settled()
	res := b.awaitWaitedOut(t, "standby with no node", base.StatusServiceUnavailable)
	if res.StatusMessage != "Service Unavailable (no node is reporting to the manager)" || len(res.Header["Retry-After"]) != 1 {
		t.Errorf("RTSP on the standby: %q, Retry-After %v", res.StatusMessage, res.Header["Retry-After"])
	}
	start := time.Now()
	hres, body := b.getBody("/vod/t1.ts", "demo", "demo")
	if hres.StatusCode != http.StatusServiceUnavailable || hres.Header.Get("Retry-After") == "" ||
		strings.TrimSpace(body) != "no node is reporting to the manager: try again later" || time.Since(start) < b.m.QueueDeadline {
		t.Errorf("HTTP on the standby: %d after %v, Retry-After %q, %q", hres.StatusCode, time.Since(start), hres.Header.Get("Retry-After"), body)
	}
	for _, want := range []string{"no node reports to this manager, a standby", "NodeControl address " + b.m.GRPCAddr(), "the other manager was stopped"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the standby's log lacks %q:\n%s", want, log.String())
		}
	}
}

// In the manager's first restore_grace with no node registered, a viewer
// waits out the queue deadline and is told no node is reporting (RTSP and
// HTTP 503 with Retry-After), not 453 as if the nodes were full; the log
// of that refusal says no node has registered, not that the nodes lack
// an HTTP address.
func TestNoNodeYetRefusedAsNoNodeReporting(t *testing.T) {
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		m.QueueDeadline = 300 * time.Millisecond
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	if res := e.get("GET", "/vod/t1.ts", "demo", "demo"); res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Fatalf("HTTP with no node yet: %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if !strings.Contains(log.String(), "no node has registered") || strings.Contains(log.String(), "HTTP address") {
		t.Fatalf("the refusal's log:\n%s", log.String())
	}
	got := make(chan *base.Response, 1)
	go func() { got <- e.describe("demo", "demo", "t1") }()
	noNodeRefusal(t, got, 10*time.Second, "RTSP with no node yet")
}
