package acm

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"vodcluster/proto/logtest"
)

// A request for a title no node holds waits for the only node, full; the
// origin goes down while it waits. At its queue deadline, the origin
// still down and no node in service holding the title, it is refused as a
// request arriving then is at once: 503 "origin unavailable" with the
// origin's Retry-After, counted origin_down and logged so. It was refused
// 453 "no bandwidth", counted no_capacity and logged as a want of egress,
// though a node with headroom could not have served it either.
func TestDeadlineAfterOriginDownSaysOriginDown(t *testing.T) {
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		m.OriginCheck = 50 * time.Millisecond
		m.QueueDeadline = time.Second
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:11", egress: titleBps})
	e.admitOne("t1") // n1 full
	down := testutil.ToFloat64(requestsTotal.WithLabelValues("rtsp", outcomeOriginDown))
	noCap := testutil.ToFloat64(requestsTotal.WithLabelValues("rtsp", outcomeNoCapacity))
	res, waited := e.queueThen("t2", 10*time.Second, func() { e.setOriginDown(t) })
	if res.StatusCode != base.StatusServiceUnavailable || res.StatusMessage != "Service Unavailable (origin unavailable)" || len(res.Header["Retry-After"]) != 1 {
		t.Fatalf("the queue deadline, origin down, t2 on no node: %d %q, Retry-After %v", res.StatusCode, res.StatusMessage, res.Header["Retry-After"])
	}
	if waited < e.m.QueueDeadline {
		t.Fatalf("refused after %v, before the queue deadline: not the deadline's refusal", waited)
	}
	if n := testutil.ToFloat64(requestsTotal.WithLabelValues("rtsp", outcomeOriginDown)) - down; n != 1 {
		t.Fatalf("origin_down counted %v times, want 1", n)
	}
	if n := testutil.ToFloat64(requestsTotal.WithLabelValues("rtsp", outcomeNoCapacity)) - noCap; n != 0 {
		t.Fatalf("no_capacity counted %v times, want 0", n)
	}
	line := logLine(t, log.String(), "origin unavailable and no node")
	if !strings.Contains(line, "admission refused while it waited: ") || !strings.Contains(line, " waited=") {
		t.Fatalf("the refusal's log:\n%s", line)
	}
	if strings.Contains(log.String(), "no node could take it within the queue deadline") {
		t.Fatalf("logged as a want of bandwidth:\n%s", log.String())
	}
}
