package main

import (
	"context"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	v1 "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// TestPrefetchYieldsRoomToAViewer: a node whose disk is taken by two
// prefetches in progress (ordered over the admin API, filling slowly from
// the origin) still takes a viewer of a third title: the manager counts a
// prefetch no viewer needs as room, and the node stops one prefetch (the
// one with fewer bytes) for the viewer's fill, which ffmpeg plays; the
// other prefetch completes. The viewer was refused 453 "no node that
// could take it has disk room" while the prefetches ran.
func TestPrefetchYieldsRoomToAViewer(t *testing.T) {
	needTool(t, "ffmpeg")
	c := startTestCluster(t, 1, 100_000_000, func(o *clusterOptions) {
		o.NodeDisk = 3_100_000 // two sample titles (about 1.5 MB each), not three
		o.OriginRateBps = 1_500_000
		o.StoragePlanner = smm.PlannerNone // the prefetches are the operator's alone
	})
	adm := c.admin(t)
	ctx := context.Background()
	prefetched := []string{"sample-010", "sample-011"}
	for _, title := range prefetched {
		if _, err := adm.Prefetch(ctx, &v1.PlacementRequest{TitleId: title, NodeId: "node-1"}); err != nil {
			t.Fatalf("prefetch %s: %v", title, err)
		}
	}
	// Both filling on the node, as its own report shows them.
	eventually(t, 10*time.Second, "both prefetches filling on node-1", func() bool {
		r, err := adm.ListFills(ctx, &v1.ListFillsRequest{})
		if err != nil {
			return false
		}
		filling := 0
		for _, f := range r.Fills {
			if f.NodeId == "node-1" && f.Prefetch && f.State == "filling" && f.StoredBytes > 0 {
				filling++
			}
		}
		return filling == len(prefetched)
	})
	for _, title := range prefetched {
		if c.filled(0, title) {
			t.Fatalf("%s complete before the viewer came: the origin is too fast for this test", title)
		}
	}

	p := runFFmpeg(t, c.frontURL("demo", "demo", "sample-012"), "tcp", 2)
	if p.Err != nil || p.Frames < 45 {
		t.Fatalf("play of a third title with the disk taken by two prefetches: %v, %d frames\n%s", p.Err, p.Frames, p.Out)
	}
	eventually(t, 30*time.Second, "sample-012 filled on node-1", func() bool { return c.filled(0, "sample-012") })
	if got := c.nodes[0].Stats().FillsFailed["preempted"]; got != 1 {
		t.Fatalf("prefetches preempted: %d, want 1 (%v)", got, c.nodes[0].Stats().FillsFailed)
	}
	completed := 0
	for _, title := range prefetched {
		eventually(t, 30*time.Second, "the end of the prefetch of "+title, func() bool {
			for _, s := range c.nodes[0].Titles() {
				if s.ID == title && s.Filling {
					return false
				}
			}
			return true
		})
		if c.filled(0, title) {
			completed++
		}
	}
	if completed != 1 {
		t.Fatalf("prefetches completed: %d, want 1 (the other gave its room to the viewer)", completed)
	}
}

// TestPrefetchYieldsItsOriginChannelToAViewer: with the origin's only
// channel taken by a prefetch ordered over the admin API (filling slowly),
// a viewer of a title no node holds is placed at once, and the origin
// gives the prefetch's channel to the viewer's fill, which ffmpeg plays;
// the prefetch asks again, resumes from its bytes and completes. The
// viewer was refused 453 "every origin channel is busy" while the
// prefetch ran: the manager counted the prefetch in its budget of
// channels, and the origin queued the fill behind it. A viewer of the
// prefetch's title meanwhile waits for a channel (453 at the queue
// deadline), where it was admitted and stalled on the prefetch's bytes.
func TestPrefetchYieldsItsOriginChannelToAViewer(t *testing.T) {
	needTool(t, "ffmpeg")
	c := startTestCluster(t, 1, 100_000_000, func(o *clusterOptions) {
		o.OriginMaxTransfers = 1
		o.OriginRateBps = 1_500_000
		o.StoragePlanner = smm.PlannerNone // the prefetch is the operator's alone
	})
	adm := c.admin(t)
	ctx := context.Background()
	if _, err := adm.Prefetch(ctx, &v1.PlacementRequest{TitleId: "sample-010", NodeId: "node-1"}); err != nil {
		t.Fatalf("prefetch: %v", err)
	}
	eventually(t, 10*time.Second, "the prefetch filling on node-1", func() bool {
		r, err := adm.ListFills(ctx, &v1.ListFillsRequest{})
		if err != nil {
			return false
		}
		for _, f := range r.Fills {
			if f.NodeId == "node-1" && f.TitleId == "sample-010" && f.Prefetch && f.State == "filling" && f.StoredBytes > 0 {
				return true
			}
		}
		return false
	})
	if c.filled(0, "sample-010") {
		t.Fatal("the prefetch completed before the viewer came: the origin is too fast for this test")
	}

	p := runFFmpeg(t, c.frontURL("demo", "demo", "sample-012"), "tcp", 2)
	if p.Err != nil || p.Frames < 45 {
		t.Fatalf("play of a cold title with the only origin channel taken by a prefetch: %v, %d frames\n%s", p.Err, p.Frames, p.Out)
	}
	if st := c.origin.Stats(); st.Yielded != 1 {
		t.Errorf("origin: %d prefetches yielded, want 1 (%+v)", st.Yielded, st)
	}
	// While sample-012's fill holds the channel, the prefetch is listed
	// waiting in the origin's queue.
	eventually(t, 10*time.Second, "the prefetch listed waiting for the origin", func() bool {
		r, err := adm.ListFills(ctx, &v1.ListFillsRequest{})
		if err != nil {
			return false
		}
		for _, f := range r.Fills {
			if f.TitleId == "sample-010" && f.State == "origin wait" {
				return true
			}
		}
		return c.filled(0, "sample-012") // the channel came back first
	})
	// While sample-012's fill holds the channel, a viewer of the title the
	// prefetch waits for is not sent to play its bytes and stall: it
	// waits for a channel, and is refused at the queue deadline.
	if !c.filled(0, "sample-012") {
		res := dialRTSPC(t, c.manager.RTSPAddr(), "demo", "demo").do("DESCRIBE", c.frontURL("", "", "sample-010"))
		if res.StatusCode != base.StatusNotEnoughBandwidth && !c.filled(0, "sample-012") {
			t.Errorf("a viewer of the prefetch's title with the only channel taken by a viewer's fill: %d %s, want 453", res.StatusCode, res.StatusMessage)
		}
	}
	eventually(t, 30*time.Second, "sample-012 filled on node-1", func() bool { return c.filled(0, "sample-012") })
	eventually(t, 60*time.Second, "the prefetch of sample-010 complete", func() bool { return c.filled(0, "sample-010") })
	if got := c.nodes[0].Stats().FillsFailed; len(got) != 0 {
		t.Errorf("fills failed on node-1: %v, want none (a prefetch that gave its channel away resumes)", got)
	}
}
