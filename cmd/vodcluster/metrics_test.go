package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"vodcluster/cmd/internal/probe"
)

// scrape returns the value of the sample named by the regexp-quoted
// series (name and labels as exposed), -1 when absent.
func scrape(t *testing.T, addr, series string) float64 {
	t.Helper()
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("scrape %s: %d %v", addr, res.StatusCode, err)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The manager, the nodes and the origin serve Prometheus metrics that
// follow a play: the session while it plays, the front door's admission,
// the node's bytes and fill, the origin's transfer; and the Go runtime's.
func TestMetricsFollowAPlay(t *testing.T) {
	c := startTestCluster(t, 1, 100_000_000, nil)
	m, n, o := c.manager.MetricsAddr(), c.nodes[0].MetricsAddr(), c.origin.MetricsAddr()
	if m == "" || n == "" || o == "" {
		t.Fatalf("metrics endpoints: manager %q node %q origin %q", m, n, o)
	}
	if v := scrape(t, m, `vodcluster_node_up{node="node-1"}`); v != 1 {
		t.Fatalf("node_up %v", v)
	}
	played := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := probe.Play(ctx, c.frontURL("demo", "demo", "sample-001"), probe.Options{Duration: 3 * time.Second})
		if err == nil && res.VideoFrames == 0 {
			err = io.ErrUnexpectedEOF
		}
		played <- err
	}()
	eventually(t, 15*time.Second, "the playing session in the manager's metrics", func() bool {
		return scrape(t, m, `vodcluster_sessions{protocol="rtsp",state="playing"}`) == 1 &&
			scrape(t, n, `vodnode_sessions{protocol="rtsp"}`) == 1
	})
	if v := scrape(t, m, `vodcluster_node_reserved_bits_per_second{node="node-1"}`); v <= 0 {
		t.Fatalf("reserved while playing: %v", v)
	}
	if err := <-played; err != nil {
		t.Fatalf("play: %v", err)
	}
	for _, c := range []struct {
		addr, series string
	}{
		{m, `vodcluster_frontdoor_requests_total{outcome="admitted",protocol="rtsp"}`},
		{n, `vodnode_sent_bytes_total`},
		{n, `vodnode_origin_bytes_total`},
		{n, `vodnode_fills_started_total`},
		{o, `cdp_transfers_total`},
		{o, `cdp_sent_bytes_total`},
		{m, `go_goroutines`},
		{n, `go_goroutines`},
	} {
		if v := scrape(t, c.addr, c.series); v <= 0 {
			t.Errorf("%s = %v after a play, want > 0", c.series, v)
		}
	}
	// Series present at 0: an alert on failed fills has something to read.
	if v := scrape(t, n, `vodnode_fills_failed_total{cause="origin"}`); v != 0 {
		t.Errorf(`vodnode_fills_failed_total{cause="origin"} = %v after a good play, want 0`, v)
	}
}
