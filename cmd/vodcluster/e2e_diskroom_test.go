//go:build linux

package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	v1 "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// A node whose file system cannot hold a title (its data_dir a 1 MB
// tmpfs, disk_bytes 200 MB) is sent no viewer that would fill it there:
// with another node in service the viewers go to that node and play; with
// that node drained the front door refuses them, 453 over RTSP and 503
// over HTTP, and the small node never starts a fill. The manager counted
// the budget alone and sent the viewer to the small node, whose fill
// failed with "no space left on device" after about a second of video.
// It mounts a real tmpfs: skipped where that is not allowed (not root).
func TestNoFillOnANodeWhoseFileSystemIsFull(t *testing.T) {
	base := t.TempDir()
	small := filepath.Join(base, "node-1")
	if err := os.MkdirAll(small, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", small, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
		t.Skipf("cannot mount a 1 MB tmpfs here (root with CAP_SYS_ADMIN needed): %v", err)
	}
	t.Cleanup(func() { unix.Unmount(small, unix.MNT_DETACH) }) // after the cluster stops
	c := startTestCluster(t, 2, 100_000_000, func(o *clusterOptions) {
		o.DataDir = base
		o.NodeDisk = 200_000_000
		o.StoragePlanner = smm.PlannerNone // fills on demand only
	})
	admin := c.admin(t)
	// The small node's first load report (its registration gives only
	// its budget) shows less free disk than a title (about 1.5 MB).
	eventually(t, 10*time.Second, "node-1's load report of its free disk", func() bool {
		r, err := admin.ListNodes(t.Context(), &v1.ListNodesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range r.GetNodes() {
			if n.GetNodeId() == "node-1" {
				return n.GetDiskFreeBytes() < 1<<20
			}
		}
		return false
	})

	// Both in service: every viewer goes to node-2 and plays.
	for _, title := range []string{"sample-001", "sample-002", "sample-003"} {
		loc := c.frontGet(t, "/vod/"+title+".ts", "")
		if i := c.nodeAt(t, loc.Host); i != 1 {
			t.Fatalf("%s: the viewer was sent to node-%d, whose file system has 1 MB", title, i+1)
		}
		if b := nodeGet(t, loc, "", 188*500); len(b) != 188*500 {
			t.Fatalf("%s: %d bytes from node-2, want %d", title, len(b), 188*500)
		}
	}
	if p := runFFmpeg(t, c.frontURL("demo", "demo", "sample-004"), "tcp", 2); p.Err != nil || p.Frames < 40 {
		t.Fatalf("RTSP play with node-2 in service: %d frames, %v\n%s", p.Frames, p.Err, p.Out)
	}

	// node-2 drained: nowhere to fill, refused with a status saying so.
	v := true
	if _, err := admin.SetNode(t.Context(), &v1.SetNodeRequest{NodeId: "node-2", Draining: &v}); err != nil {
		t.Fatal(err)
	}
	if out, _ := rtspStatus(t, c.frontURL("demo", "demo", "sample-005")); !strings.Contains(out, "453") || !strings.Contains(out, "disk room") {
		t.Fatalf("RTSP with only the full node in service: want 453 saying no node has disk room, ffprobe said:\n%s", out)
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
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "disk room") {
		t.Fatalf("HTTP with only the full node in service: %s %q (Location %q), want 503 saying no node has disk room", resp.Status, body, resp.Header.Get("Location"))
	}
	if f := c.nodes[0].Stats().FillsStarted; len(f) != 0 {
		t.Fatalf("node-1 started fills %v on a 1 MB file system", f)
	}
}
