package acm

import (
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

// The only node is dead within restore_grace (the manager waits for it):
// a viewer waits out the queue deadline (the node may come back) and is
// then told the truth, RTSP and HTTP 503 with Retry-After, no node in
// service with one out of touch, counted no_capacity; it was told 453
// "not enough bandwidth", as if the node were full, while the log said
// no node is in service. The log, at warn, names the node and how long
// it has been dead.
func TestDeadlineWithNodeDeadWithinGraceSaysOutOfTouch(t *testing.T) {
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		m.QueueDeadline = 500 * time.Millisecond // restore_grace 30 s
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	n1 := e.startNode("n1", nodeOpts{})
	e.settled()
	n1.stop()
	waitFor(t, 5*time.Second, "n1 dead", func() bool { return !e.nodeInfo("n1").Alive })
	before := testutil.ToFloat64(requestsTotal.WithLabelValues("rtsp", outcomeNoCapacity))
	res := e.awaitWaitedOut(t, "n1 dead within restore_grace", base.StatusServiceUnavailable)
	const want = "no node is in service: 1 node out of touch, waiting up to restore_grace for it"
	if res.StatusMessage != "Service Unavailable ("+want+")" || len(res.Header["Retry-After"]) != 1 || res.Header["Retry-After"][0] != "1" {
		t.Fatalf("RTSP: %q, Retry-After %v", res.StatusMessage, res.Header["Retry-After"])
	}
	if n := testutil.ToFloat64(requestsTotal.WithLabelValues("rtsp", outcomeNoCapacity)) - before; n != 1 {
		t.Fatalf("no_capacity counted %v times, want 1", n)
	}
	start := time.Now()
	hres, body := e.getBody("/vod/t1.ts", "demo", "demo")
	if hres.StatusCode != http.StatusServiceUnavailable || hres.Header.Get("Retry-After") != "1" ||
		strings.TrimSpace(body) != want+": try again later" || time.Since(start) < e.m.QueueDeadline {
		t.Fatalf("HTTP: %d after %v, Retry-After %q, %q", hres.StatusCode, time.Since(start), hres.Header.Get("Retry-After"), body)
	}
	line := logLine(t, log.String(), "is out of touch")
	for _, s := range []string{"level=WARN", "admission refused while it waited: no node is in service", "restore_grace (30s)", "n1 (dead, last heartbeat ", "out_of_touch=1", " waited="} {
		if !strings.Contains(line, s) {
			t.Errorf("the refusal's log lacks %q:\n%s", s, line)
		}
	}
	if strings.Contains(log.String(), "no node could take it within the queue deadline") {
		t.Fatalf("logged as a want of bandwidth:\n%s", log.String())
	}
}

// One node drained, two dead within restore_grace: the queue deadline's
// refusal counts the two the manager waits for, not the drained one (back
// only when an operator acts), and its log names them.
func TestDeadlineWithNodesDeadWithinGraceCountsThem(t *testing.T) {
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		m.QueueDeadline = 500 * time.Millisecond
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	e.startNode("n1", nodeOpts{})
	n2 := e.startNode("n2", nodeOpts{})
	n3 := e.startNode("n3", nodeOpts{})
	e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)})
	e.settled()
	n2.stop()
	n3.stop()
	waitFor(t, 5*time.Second, "n2 and n3 dead", func() bool { return !e.nodeInfo("n2").Alive && !e.nodeInfo("n3").Alive })
	res := e.awaitWaitedOut(t, "n1 drained, n2 and n3 dead within restore_grace", base.StatusServiceUnavailable)
	if res.StatusMessage != "Service Unavailable (no node is in service: 2 nodes out of touch, waiting up to restore_grace for them)" || len(res.Header["Retry-After"]) != 1 {
		t.Fatalf("RTSP: %q, Retry-After %v", res.StatusMessage, res.Header["Retry-After"])
	}
	line := logLine(t, log.String(), "is out of touch")
	if !strings.Contains(line, "n2 (dead, ") || !strings.Contains(line, "n3 (dead, ") || strings.Contains(line, "n1") || !strings.Contains(line, "out_of_touch=2") {
		t.Fatalf("the refusal's log:\n%s", line)
	}
}

// The only node's heartbeat stream broke (unreachable, not yet taken for
// dead): the queue deadline's refusal counts it out of touch too, and the
// log says its stream broke.
func TestDeadlineWithNodeUnreachableSaysOutOfTouch(t *testing.T) {
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		noTick(m) // n1 is not taken for dead within the test
		m.QueueDeadline = 500 * time.Millisecond
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	n1 := e.startNode("n1", nodeOpts{})
	e.settled()
	n1.stop()
	waitFor(t, 5*time.Second, "the broken stream noticed", func() bool { return e.unreachable("n1") })
	res := e.awaitWaitedOut(t, "n1 unreachable", base.StatusServiceUnavailable)
	if res.StatusMessage != "Service Unavailable (no node is in service: 1 node out of touch, waiting up to restore_grace for it)" {
		t.Fatalf("RTSP: %q", res.StatusMessage)
	}
	if line := logLine(t, log.String(), "is out of touch"); !strings.Contains(line, "n1 (heartbeat stream broken, last heartbeat ") {
		t.Fatalf("the refusal's log:\n%s", line)
	}
}
