package main

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// A node started without an origin plays only the titles on its disk, and
// the manager knows it: node-2, restarted without an origin on the disk
// it filled sample-001 to, is listed no_origin; a viewer of a title
// neither node holds is sent to node-1, which fills it, and plays
// (ffmpeg); with node-1 drained, a viewer of a title node-2 lacks is
// refused at the front door, 453 over RTSP (ffprobe) and 503 over HTTP,
// saying no node holds the title and none can fetch it, not redirected
// to node-2 to get a 404 there; the title node-2 holds plays from it, and
// the operator's prefetch there is refused.
func TestNodeWithoutOriginPlaysOnlyItsTitles(t *testing.T) {
	needTool(t, "ffmpeg")
	needTool(t, "ffprobe")
	c := startTestCluster(t, 2, 100_000_000, func(o *clusterOptions) {
		o.StoragePlanner = smm.PlannerNone // fills on demand and by order only
		o.OriginRateBps = 40_000_000
	})
	admin := c.admin(t)
	if _, err := admin.Prefetch(t.Context(), &v1.PlacementRequest{TitleId: "sample-001", NodeId: "node-2"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "sample-001 on node-2", func() bool { return slices.Contains(c.holders("sample-001"), "node-2") })

	// node-2 restarted without an origin, on the same disk.
	if err := c.nodes[1].Close(); err != nil {
		t.Fatal(err)
	}
	bare := c.newNode("node-2")
	bare.OriginAddr = ""
	if err := bare.Start(); err != nil {
		t.Fatal(err)
	}
	c.nodes[1] = bare // closed with the cluster
	eventually(t, 15*time.Second, "node-2 registered again, without an origin", func() bool {
		r, err := admin.ListNodes(t.Context(), &v1.ListNodesRequest{})
		if err != nil {
			return false
		}
		for _, n := range r.GetNodes() {
			if n.GetNodeId() == "node-2" {
				return n.GetAlive() && n.GetRtspAddr() == bare.RTSPAddr() && n.GetNoOrigin() && n.GetTitles() == 1
			}
		}
		return false
	})

	// A title neither holds: to node-1, filled there, played.
	for _, title := range []string{"sample-002", "sample-003"} {
		if loc := c.frontGet(t, "/vod/"+title+".ts", ""); c.nodeAt(t, loc.Host) != 0 {
			t.Fatalf("%s: the viewer was sent to %s, the node without an origin", title, loc.Host)
		}
	}
	if p := runFFmpeg(t, c.frontURL("demo", "demo", "sample-004"), "tcp", 2); p.Err != nil || p.Frames < 40 {
		t.Fatalf("RTSP play of a title neither node holds: %d frames, %v\n%s", p.Frames, p.Err, p.Out)
	}
	if c.nodes[0].Stats().FillsStarted["sample-004"] == 0 {
		t.Fatal("sample-004 was not filled on node-1")
	}
	if f := bare.Stats().FillsStarted; len(f) != 0 {
		t.Fatalf("the node without an origin started fills %v", f)
	}

	// node-1 drained: only node-2 in service.
	v := true
	if _, err := admin.SetNode(t.Context(), &v1.SetNodeRequest{NodeId: "node-1", Draining: &v}); err != nil {
		t.Fatal(err)
	}
	const why = "no node holds the title and none can fetch it"
	if out, _ := rtspStatus(t, c.frontURL("demo", "demo", "sample-005")); !strings.Contains(out, "453") || !strings.Contains(out, why) {
		t.Fatalf("RTSP, a title the only node in service lacks: want 453 saying %q, ffprobe said:\n%s", why, out)
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+c.manager.HTTPAddr()+"/vod/sample-006.ts", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("demo", "demo")
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), why) || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("HTTP, a title the only node in service lacks: %s %q (Location %q), want 503 with Retry-After saying %q",
			resp.Status, body, resp.Header.Get("Location"), why)
	}
	// The title it holds plays from it.
	if loc := c.frontGet(t, "/vod/sample-001.ts", ""); c.nodeAt(t, loc.Host) != 1 {
		t.Fatalf("sample-001 sent to %s, want node-2, which holds it", loc.Host)
	}
	if p := runFFmpeg(t, c.frontURL("demo", "demo", "sample-001"), "tcp", 2); p.Err != nil || p.Frames < 40 {
		t.Fatalf("RTSP play of the title node-2 holds: %d frames, %v\n%s", p.Frames, p.Err, p.Out)
	}
	if _, err := admin.Prefetch(t.Context(), &v1.PlacementRequest{TitleId: "sample-002", NodeId: "node-2"}); err == nil || !strings.Contains(err.Error(), "no origin") {
		t.Fatalf("prefetch on the node without an origin: %v, want a refusal saying it has no origin", err)
	}
	if f := bare.Stats().FillsStarted; len(f) != 0 {
		t.Fatalf("the node without an origin started fills %v", f)
	}
}
