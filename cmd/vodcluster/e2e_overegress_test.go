package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	v1 "vodcluster/proto/vodcluster/v1"
)

// A title whose bitrate is more than any node's egress (node egress_bps)
// can never be placed: the front door says so at once, RTSP 453 (ffprobe)
// and HTTP 503, naming the cause and without Retry-After, instead of
// holding the viewer for the whole queue deadline and answering "not
// enough bandwidth: try again later" with a Retry-After. The operator's
// prefetch of such a title on a node is refused too.
func TestTitleOverEveryNodesEgressRefusedAtOnce(t *testing.T) {
	needTool(t, "ffprobe")
	const deadline = 8 * time.Second
	// The sample titles are about 600 kbit/s; the nodes stream 500 kbit/s.
	c := startTestCluster(t, 2, 500_000, func(o *clusterOptions) {
		o.QueueDeadline = deadline
		o.RestoreGrace = time.Millisecond // both nodes registered: settled
	})
	const why = "the title's bitrate is more than any node can stream"
	out, took := rtspStatus(t, c.frontURL("demo", "demo", "sample-001"))
	if !strings.Contains(out, "453") || !strings.Contains(out, why) || took >= deadline/2 {
		t.Fatalf("RTSP, a title over every node's egress: want 453 saying %q well before the queue deadline (%v); after %v ffprobe said:\n%s", why, deadline, took, out)
	}

	req, err := http.NewRequest(http.MethodGet, "http://"+c.manager.HTTPAddr()+"/vod/sample-002.ts", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("demo", "demo")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), why) ||
		resp.Header.Get("Retry-After") != "" || took >= deadline/2 {
		t.Fatalf("HTTP, a title over every node's egress: %s %q Retry-After %q after %v; want 503 saying %q, no Retry-After, well before the queue deadline (%v)",
			resp.Status, body, resp.Header.Get("Retry-After"), took, why, deadline)
	}
	// Nor is it filled there by the operator's order: it would take disk
	// and an origin channel and never play.
	admin := c.admin(t)
	if _, err := admin.Prefetch(t.Context(), &v1.PlacementRequest{TitleId: "sample-003", NodeId: "node-1"}); status.Code(err) != codes.FailedPrecondition ||
		!strings.Contains(err.Error(), "is more than node \"node-1\" can stream") {
		t.Fatalf("prefetch of a title over the node's egress: %v, want FAILED_PRECONDITION saying it is more than the node can stream", err)
	}
	if n := c.nodeFills("sample-001") + c.nodeFills("sample-002") + c.nodeFills("sample-003"); n != 0 {
		t.Fatalf("%d fills started for titles no node can stream", n)
	}
}
