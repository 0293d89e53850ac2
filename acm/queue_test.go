package acm

import (
	"context"
	"fmt"
	"testing"
	"time"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// slowDelete is a store whose session deletes take a while (a remote
// store, a disk flush).
type slowDelete struct {
	store.Store
	d time.Duration
}

func (s slowDelete) DeleteSession(ctx context.Context, id string) error {
	time.Sleep(s.d) // the store's latency, not a synchronisation
	return s.Store.DeleteSession(ctx, id)
}

// The admission queue is first come, first served: a request that
// arrives after one already waiting does not take the capacity a release
// freed before the pump ran (the ended session is stored before the pump
// is kicked, here slowly), the waiting one does.
func TestQueueOrderAfterRelease(t *testing.T) {
	dir := t.TempDir()
	b, err := store.OpenBadger(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	e := newManager(t, dir, func(m *Manager) {
		m.Store = slowDelete{b, 500 * time.Millisecond}
		m.QueueDeadline = 4 * time.Second // the wait for the release, loaded under -race, and the late request's
	})
	n := e.startNode("n1", nodeOpts{egress: titleBps}) // room for one viewer
	a := e.admitOne("t1")
	first := make(chan int, 1)
	go func() { first <- int(e.describe("demo", "demo", "t2").StatusCode) }()
	waitFor(t, 2*time.Second, "the first request to queue", func() bool { return e.queued() == 1 })
	go n.event(a, pb.SessionEvent_KIND_ENDED) // A ends: room for the waiting request
	// The window between the release and the pump is the slow delete's
	// 500 ms; a poll starved past it (a loaded machine) finds the waiting
	// request already answered, and the late one still must not win.
	waitFor(t, 2*time.Second, "the release", func() bool { return e.reserved("n1") == 0 || len(first) > 0 })
	late := e.describe("demo", "demo", "t3").StatusCode // arrives after the waiting one
	if got := <-first; got != 302 || late == 302 {
		t.Errorf("the request waiting first got %d; the one that came later got %d", got, late)
	}
}

// A request for a title no node holds, while every origin channel is
// taken by fills, waits in the admission queue (rather than being sent to
// a node to wait there with its session started and no media), and is
// placed when a fill completes.
func TestFillWaitsForOriginChannel(t *testing.T) {
	e := newManager(t, "", func(m *Manager) {
		m.OriginChannels = 1
		m.QueueDeadline = 10 * time.Second
	})
	n := e.startNode("n1", nodeOpts{})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != 302 {
		t.Fatalf("first cold title: %d", res.StatusCode)
	}
	got := make(chan int, 1)
	go func() { got <- int(e.describe("demo", "demo", "t2").StatusCode) }()
	waitFor(t, 5*time.Second, "the second cold title to wait for the channel", func() bool { return e.queued() == 1 })
	size := e.m.titles()["t1"].SizeBytes
	n.mu.Lock()
	n.titles = []*pb.StoredTitle{{TitleId: "t1", SizeBytes: size, StoredBytes: size}} // t1's fill completed
	n.mu.Unlock()
	select {
	case code := <-got:
		if code != 302 {
			t.Fatalf("after the fill completed: %d", code)
		}
	case <-time.After(waitForMin):
		t.Fatal("still waiting after the fill completed")
	}
}

// A node that crashed in the middle of a fill holds no origin channel:
// a title no live node holds is placed on the idle node.
func TestCrashedFillerHoldsNoChannel(t *testing.T) {
	e := newManager(t, "", func(m *Manager) {
		m.OriginChannels = 1
		m.QueueDeadline = time.Second
	})
	n1 := e.startNode("n1", nodeOpts{})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != 302 {
		t.Fatalf("t1: %d", res.StatusCode)
	}
	size := e.m.titles()["t1"].SizeBytes
	n1.mu.Lock()
	n1.titles = []*pb.StoredTitle{{TitleId: "t1", SizeBytes: size, StoredBytes: size / 2, Filling: true}}
	n1.mu.Unlock()
	at := e.reports("n1")
	waitFor(t, 2*time.Second, "the fill in a report", func() bool { return e.reports("n1") > at+1 })
	n1.stop() // n1 crashes mid-fill
	e.startNode("n2", nodeOpts{})
	waitFor(t, 5*time.Second, "n1 dead", func() bool { return !e.nodeInfo("n1").Alive })
	if res := e.describe("demo", "demo", "t2"); res.StatusCode != 302 {
		t.Fatalf("t2 with n2 idle and n1 dead: %d", res.StatusCode)
	}
}

// Without the origin's channels configured (OriginChannels 0: the
// planner's default), fills on demand are not held back.
func TestUnconfiguredChannelsDoNotLimitFills(t *testing.T) {
	var titles []*pb.Title
	for i := range 6 {
		titles = append(titles, &pb.Title{Id: fmt.Sprintf("c%d", i), Name: "c", DurationS: 20, BitrateBps: 600_000, SizeBytes: 1_500_000, Package: "kids"})
	}
	e := newManagerWith(t, "", titles, nil)
	e.startNode("n1", nodeOpts{egress: 100 * titleBps})
	for i := range 6 {
		if res := e.describe("demo", "demo", fmt.Sprintf("c%d", i)); res.StatusCode != 302 {
			t.Fatalf("cold title %d of 6 with origin_channels not set: %d", i+1, res.StatusCode)
		}
	}
}

// A manager no node has registered with yet (a standby that just took
// over, before its nodes reconnect) refuses a request after the queue
// deadline, over RTSP and HTTP (503: no node is reporting), and keeps
// serving.
func TestNoNodeYetRefuses(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.QueueDeadline = 200 * time.Millisecond })
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != 503 {
		t.Fatalf("RTSP with no node: %d", res.StatusCode)
	}
	if res := e.get("GET", "/vod/t1.ts", "demo", "demo"); res.StatusCode != 503 {
		t.Fatalf("HTTP with no node: %d", res.StatusCode)
	}
	e.startNode("n1", nodeOpts{})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != 302 {
		t.Fatalf("after a node registered: %d", res.StatusCode)
	}
}
