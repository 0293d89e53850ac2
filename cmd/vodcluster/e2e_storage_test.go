package main

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm"
	"vodcluster/acm/boss"
	"vodcluster/lsm"
	v1 "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// The storage manager in the real cluster: the manager runs the default
// storage policy (gdsf with the Replicator planner) against real nodes, a
// real origin and ffmpeg. The sample catalog promotes sample-016..018
// (popularity hints), so every cluster prefetches them when it starts.

var promoted = []string{"sample-016", "sample-017", "sample-018"}

// restartManager closes the cluster's manager and starts a new one on the
// same gRPC address and data directory (the nodes find it again), with
// the settings startCluster gives plus tune; it waits for the nodes.
func restartManager(t *testing.T, c *cluster, tune func(*acm.Manager)) {
	t.Helper()
	addr := c.manager.GRPCAddr()
	if err := c.manager.Close(); err != nil {
		t.Fatal(err)
	}
	users, err := boss.NewFile(acm.DefaultRealm, c.opts.Users)
	if err != nil {
		t.Fatal(err)
	}
	sched := lsm.DefaultConfig()
	if c.opts.Heartbeat > 0 {
		sched.HeartbeatInterval = c.opts.Heartbeat
	}
	m := &acm.Manager{
		RTSPListen: hostPort(c.opts.Host, 0), HTTPListen: hostPort(c.opts.Host, 0), GRPCListen: addr,
		DataDir: filepath.Join(c.opts.DataDir, "manager"), OriginAddr: c.origin.Addr(), Secret: c.secret, BOSS: users,
		QueueDeadline: c.opts.QueueDeadline, Scheduler: sched, Logger: c.opts.Logger.With("component", "manager"),
	}
	m.Replicator.MaxFillsPerNode = c.opts.MaxFillsPerNode
	// The cluster's off-peak window (never, in startTestCluster): left
	// out, the restarted manager took the default, 02:00-08:00, and the
	// tests behaved otherwise in those hours.
	m.Replicator.OffPeak = c.opts.OffPeak
	if tune != nil {
		tune(m)
	}
	if err := m.Start(); err != nil {
		t.Fatalf("manager restart: %v", err)
	}
	c.manager = m
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.waitNodes(ctx, len(c.nodes)); err != nil {
		t.Fatal(err)
	}
}

// holds reports whether node i holds title completely; prefetched tells
// whether its fill was ordered ahead of demand.
func (c *cluster) holds(i int, title string) (held, prefetched bool) {
	for _, s := range c.nodes[i].Titles() {
		if s.ID == title {
			return !s.Filling && s.Stored == s.Size, s.Prefetch
		}
	}
	return false, false
}

func (c *cluster) on(i int, title string) bool {
	for _, s := range c.nodes[i].Titles() {
		if s.ID == title {
			return true
		}
	}
	return false
}

// diskWatch looks at one node's disk every 10 ms until Stop: whether the
// guarded titles were always there, and the fewest of a set of titles it
// saw there at once.
type diskWatch struct {
	mu      sync.Mutex
	missing []string // guarded titles seen absent
	fewest  int      // fewest of the counted titles seen at once

	stop, done chan struct{}
	once       sync.Once
}

func watchDisk(c *cluster, i int, guard, counted []string) *diskWatch {
	w := &diskWatch{fewest: len(counted), stop: make(chan struct{}), done: make(chan struct{})}
	n := c.nodes[i]
	go func() {
		defer close(w.done)
		for {
			on := map[string]bool{}
			w.mu.Lock()
			for _, s := range n.Titles() {
				on[s.ID] = true
			}
			for _, g := range guard {
				if !on[g] && !slices.Contains(w.missing, g) {
					w.missing = append(w.missing, g)
				}
			}
			k := 0
			for _, t := range counted {
				if on[t] {
					k++
				}
			}
			w.fewest = min(w.fewest, k)
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return w
}

// Stop ends the watch after its last look; safe to call twice.
func (w *diskWatch) Stop() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}

// filled reports whether node i completed a fill of title (stored it
// whole) since it started, even if the title was evicted at once after:
// a look at its disk could miss that.
func (c *cluster) filled(i int, title string) bool {
	return c.nodes[i].Stats().FillsCompleted[title] > 0
}

func (w *diskWatch) result() (missing []string, fewest int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.missing), w.fewest
}

// playNoOrigin plays title for 3 s and checks that the play cost the
// origin nothing: no transfer of the title, no fill started by a node.
func playNoOrigin(t *testing.T, c *cluster, title string) {
	t.Helper()
	transfers, fills := c.origin.Stats().TitleTransfers[title], c.nodeFills(title)
	p := runFFmpeg(t, c.frontURL("demo", "demo", title), "tcp", 3)
	if p.Err != nil || p.Frames < 70 {
		t.Fatalf("play of %s: %v, %d frames\n%s", title, p.Err, p.Frames, p.Out)
	}
	if n := c.origin.Stats().TitleTransfers[title]; n != transfers {
		t.Fatalf("the play of prefetched %s fetched it from the origin: transfers %d -> %d", title, transfers, n)
	}
	if n := c.nodeFills(title); n != fills {
		t.Fatalf("the play of prefetched %s started a fill: %d -> %d", title, fills, n)
	}
}

// TestStoragePrefetchedPlaysWithoutOrigin: a title the planner prefetched
// because the catalog promotes it, one the operator prefetched by hand on
// a node, and one prefetched where the storage manager chose, each play
// from disk with no origin fetch at play time. The default manager (as
// `vodcluster up` runs it) is used: outside the off-peak window it
// prefetches one title at a time, so this takes a few fills' time.
func TestStoragePrefetchedPlaysWithoutOrigin(t *testing.T) {
	c := startTestCluster(t, 3, 100_000_000, nil)
	adm := c.admin(t)
	ctx := context.Background()
	const hinted = "sample-016"
	eventually(t, 60*time.Second, "the planner's prefetch of promoted "+hinted, func() bool { return len(c.holders(hinted)) == 1 })
	for i := range c.nodes {
		if held, pre := c.holds(i, hinted); held && !pre {
			t.Fatalf("%s on %s was not filled by a prefetch", hinted, c.nodes[i].ID)
		}
	}
	if n := c.origin.Stats().TitleTransfers[hinted]; n != 1 {
		t.Fatalf("origin transfers of %s: %d, want 1 (the prefetch)", hinted, n)
	}
	playNoOrigin(t, c, hinted)

	// By hand on node-2, with its progress visible while it fills.
	const byHand = "sample-012"
	ack, err := adm.Prefetch(ctx, &v1.PlacementRequest{TitleId: byHand, NodeId: "node-2"})
	if err != nil || ack.NodeId != "node-2" {
		t.Fatalf("prefetch: %v %v", ack, err)
	}
	sawProgress := false
	eventually(t, 30*time.Second, byHand+" on node-2", func() bool {
		r, err := adm.ListFills(ctx, &v1.ListFillsRequest{})
		if err == nil {
			for _, f := range r.Fills {
				if f.NodeId == "node-2" && f.TitleId == byHand && f.Prefetch && f.State == "filling" &&
					f.StoredBytes > 0 && f.StoredBytes < f.SizeBytes {
					sawProgress = true
				}
			}
		}
		held, _ := c.holds(1, byHand)
		return held
	})
	if !sawProgress {
		t.Fatal("ListFills never showed the prefetch's progress (filling, 0 < stored < size)")
	}
	if _, err := adm.Prefetch(ctx, &v1.PlacementRequest{TitleId: byHand, NodeId: "node-2"}); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("second prefetch on the same node: %v", err)
	}
	playNoOrigin(t, c, byHand)

	// Where the storage manager chooses.
	const chosen = "sample-013"
	ack, err = adm.Prefetch(ctx, &v1.PlacementRequest{TitleId: chosen})
	if err != nil || ack.NodeId == "" {
		t.Fatalf("prefetch without a node: %v %v", ack, err)
	}
	i := -1
	for j, n := range c.nodes {
		if n.ID == ack.NodeId {
			i = j
		}
	}
	if i < 0 {
		t.Fatalf("chosen node %q", ack.NodeId)
	}
	eventually(t, 30*time.Second, chosen+" on "+ack.NodeId, func() bool { held, _ := c.holds(i, chosen); return held })
	playNoOrigin(t, c, chosen)
}

// TestStorageEvictionNeverCutsAPlay: while ffmpeg plays a title on the
// only node, the operator's eviction of it is refused, and prefetches
// that fill the disk evict everything else but it; the play gets all its
// frames and the title stays until the session ends.
func TestStorageEvictionNeverCutsAPlay(t *testing.T) {
	needTool(t, "ffmpeg")
	// Room for five sample titles (7.6 MB at most; the planner fills 90%
	// of a disk): the three promoted, the played one and one more.
	// The operator's four prefetches below are ordered at once (not
	// queued behind the fill limit): the disk is then all playing or
	// filling.
	c := startTestCluster(t, 1, 100_000_000, func(o *clusterOptions) {
		o.NodeDisk, o.MaxFillsPerNode, o.OriginMaxTransfers = 8_500_000, 8, 8
	})
	adm := c.admin(t)
	ctx := context.Background()
	for _, p := range promoted {
		eventually(t, 60*time.Second, "the prefetch of "+p, func() bool { held, _ := c.holds(0, p); return held })
	}
	const x = "sample-009"
	done := make(chan ffmpegPlay, 1)
	go func() { done <- runFFmpeg(t, c.frontURL("demo", "demo", x), "tcp", 10) }()
	eventually(t, 20*time.Second, x+" playing on node-1", func() bool {
		for _, s := range c.nodes[0].Titles() {
			if s.ID == x && s.Readers > 0 {
				return true
			}
		}
		return false
	})
	// X must be on the node at every look until the play ends.
	w := watchDisk(c, 0, []string{x}, promoted)
	defer w.Stop()

	if _, err := adm.Evict(ctx, &v1.PlacementRequest{TitleId: x, NodeId: "node-1"}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("evicting the playing title: %v, want FailedPrecondition", err)
	}
	// Fill the disk: one title fits, each of the next three evicts a
	// promoted one; then only the playing title and four fills are left.
	more := []string{"sample-010", "sample-011", "sample-012", "sample-013"}
	for _, title := range more {
		if _, err := adm.Prefetch(ctx, &v1.PlacementRequest{TitleId: title, NodeId: "node-1"}); err != nil {
			t.Fatalf("prefetch %s: %v", title, err)
		}
	}
	if _, err := adm.Prefetch(ctx, &v1.PlacementRequest{TitleId: "sample-014", NodeId: "node-1"}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("prefetch onto a disk of titles playing or filling: %v, want ResourceExhausted", err)
	}
	// (Once complete, the planner may evict them again, at once, for the
	// promoted titles: each must have completed once on the node.)
	for _, title := range more {
		eventually(t, 30*time.Second, title+" on node-1", func() bool { return c.filled(0, title) })
	}

	p := <-done
	w.Stop()
	missing, fewest := w.result()
	if len(missing) > 0 {
		t.Fatalf("%v left node-1 while playing", missing)
	}
	if fewest > 0 {
		t.Fatalf("at least %d of the promoted titles stayed all along: the disk was never under pressure", fewest)
	}
	if p.Err != nil || p.Frames < 240 {
		t.Fatalf("play cut: %v, %d frames of 250\n%s", p.Err, p.Frames, p.Out)
	}
	// Once the session ended, the title may go.
	eventually(t, 20*time.Second, "the eviction of "+x+" after its play", func() bool {
		_, err := adm.Evict(ctx, &v1.PlacementRequest{TitleId: x, NodeId: "node-1"})
		return err == nil
	})
	eventually(t, 10*time.Second, x+" gone", func() bool { return !c.on(0, x) })
}

// TestStoragePinsSurviveRestartAndPressure: pins made over the admin API
// are prefetched, survive a manager restart, and their titles are never
// evicted when prefetches fill the disk.
func TestStoragePinsSurviveRestartAndPressure(t *testing.T) {
	c := startTestCluster(t, 1, 100_000_000, func(o *clusterOptions) {
		o.NodeDisk, o.MaxFillsPerNode, o.OriginMaxTransfers = 8_500_000, 8, 8 // the prefetches below ordered at once
		restartablePorts(t)(o)
	})
	adm := c.admin(t)
	ctx := context.Background()
	const toNode, toCluster = "sample-008", "sample-009"
	if _, err := adm.Pin(ctx, &v1.PlacementRequest{TitleId: toNode, NodeId: "node-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.Pin(ctx, &v1.PlacementRequest{TitleId: toCluster}); err != nil {
		t.Fatal(err)
	}
	// The pins and the promoted titles fill the five titles' disk.
	for _, title := range append([]string{toNode, toCluster}, promoted...) {
		eventually(t, 60*time.Second, "the prefetch of "+title, func() bool { held, _ := c.holds(0, title); return held })
	}

	restartManager(t, c, nil)
	adm = c.admin(t)
	pl, err := adm.ListPlacement(ctx, &v1.ListPlacementRequest{})
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[string]bool{}
	for _, r := range pl.Replicas {
		if r.Pinned {
			pinned[r.TitleId] = true
		}
	}
	if !pinned[toNode] || !pinned[toCluster] || len(pinned) != 2 || !slices.Equal(pl.ClusterPins, []string{toCluster}) {
		t.Fatalf("after restart: pinned %v, cluster pins %v", pinned, pl.ClusterPins)
	}
	if _, err := adm.Evict(ctx, &v1.PlacementRequest{TitleId: toNode, NodeId: "node-1"}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("evicting a pinned title: %v", err)
	}

	// Disk pressure: three prefetches take the promoted titles' room; a
	// fourth finds only pinned titles and fills.
	w := watchDisk(c, 0, []string{toNode, toCluster}, promoted)
	defer w.Stop()
	more := []string{"sample-010", "sample-011", "sample-012"}
	for _, title := range more {
		if _, err := adm.Prefetch(ctx, &v1.PlacementRequest{TitleId: title, NodeId: "node-1"}); err != nil {
			t.Fatalf("prefetch %s: %v", title, err)
		}
	}
	if _, err := adm.Prefetch(ctx, &v1.PlacementRequest{TitleId: "sample-013", NodeId: "node-1"}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("prefetch onto a disk of pinned and filling titles: %v, want ResourceExhausted", err)
	}
	for _, title := range more {
		eventually(t, 30*time.Second, title+" on node-1", func() bool { return c.filled(0, title) })
	}
	// And a fill on demand onto the full disk.
	p := runFFmpeg(t, c.frontURL("demo", "demo", "sample-014"), "tcp", 2)
	if p.Err != nil || p.Frames < 45 {
		t.Fatalf("play: %v, %d frames\n%s", p.Err, p.Frames, p.Out)
	}
	eventually(t, 30*time.Second, "sample-014 on node-1", func() bool { return c.filled(0, "sample-014") })
	w.Stop()
	missing, fewest := w.result()
	if len(missing) > 0 {
		t.Fatalf("pinned %v left node-1", missing)
	}
	if fewest > 0 {
		t.Fatalf("at least %d of the promoted titles stayed all along: the disk was never under pressure", fewest)
	}
}

// TestStorageDemandShiftAddsReplicas: repeated plays of a title make the
// planner prefetch it onto more nodes. The Replicator's rule for these
// settings (10 s popularity half-life, 6% of 10 Mbit/s = 0.6 Mbit/s per
// replica at target utilization, the off-peak window all day): three
// concurrent requests give about 3 x ln2/10 = 0.2 req/s, times a 10 s
// expected session (half the 20 s title) times 0.6 Mbit/s = 1.2 Mbit/s,
// twice what one replica carries, so at least 2 replicas; the copies
// beyond the first are prefetches, and each node fills the title once.
func TestStorageDemandShiftAddsReplicas(t *testing.T) {
	needTool(t, "ffmpeg")
	c := startTestCluster(t, 3, 10_000_000, restartablePorts(t))
	restartManager(t, c, func(m *acm.Manager) {
		m.PlanInterval = 300 * time.Millisecond
		m.ShiftCheck = 100 * time.Millisecond
		m.Replicator = smm.ReplicatorConfig{HalfLife: 10 * time.Second, TargetUtilization: 0.06,
			OffPeak: smm.Window{Start: 0, End: 24 * time.Hour}}
	})
	const x = "sample-011"
	if len(c.holders(x)) != 0 {
		t.Fatalf("%s held before any play", x)
	}
	for round := 0; round < 2; round++ {
		var wg sync.WaitGroup
		plays := make([]ffmpegPlay, 3)
		for i := range plays {
			wg.Add(1)
			go func() {
				defer wg.Done()
				plays[i] = runFFmpeg(t, c.frontURL("demo", "demo", x), "tcp", 3)
			}()
		}
		wg.Wait()
		for _, p := range plays {
			if p.Err != nil || p.Frames < 70 {
				t.Fatalf("round %d: %v, %d frames\n%s", round, p.Err, p.Frames, p.Out)
			}
		}
	}
	eventually(t, 30*time.Second, "a second replica of "+x, func() bool { return len(c.holders(x)) >= 2 })
	prefetched := 0
	for i := range c.nodes {
		if held, pre := c.holds(i, x); held && pre {
			prefetched++
		}
	}
	if prefetched == 0 {
		t.Fatalf("no replica of %s came from a prefetch: %v", x, c.holders(x))
	}
	p, err := c.admin(t).GetPolicy(context.Background(), &v1.GetPolicyRequest{})
	if err != nil || p.StorageStats.GetPrefetches() < 1 {
		t.Fatalf("storage stats %v %v", p.GetStorageStats(), err)
	}
	eventually(t, 30*time.Second, "the fills of "+x+" to finish", func() bool {
		for i := range c.nodes {
			if c.on(i, x) {
				if held, _ := c.holds(i, x); !held {
					return false
				}
			}
		}
		return true
	})
	if h, f := len(c.holders(x)), c.nodeFills(x); f != h {
		t.Fatalf("%d holders of %s, %d fills started: a node filled it twice", h, x, f)
	}
}
