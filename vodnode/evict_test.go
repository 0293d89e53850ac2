package vodnode

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func storedIDs(n *Node) []string {
	var ids []string
	for _, s := range n.Titles() {
		ids = append(ids, s.ID)
	}
	return ids
}

func waitComplete(t *testing.T, n *Node, id string) {
	t.Helper()
	waitFor(t, 10*time.Second, id+" complete", func() bool {
		for _, s := range n.Titles() {
			if s.ID == id {
				return !s.Filling && s.Stored == s.Size
			}
		}
		return false
	})
}

// TestEvictLRUNotPlaying fills the quota, then checks that each new fill
// evicts the least recently used title that is not playing, and that with
// every stored title playing the next one is refused with 453.
func TestEvictLRUNotPlaying(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.Capacity.DiskBytes = 4_600_000 })
	c := dialRTSP(t, n)
	url := func(sid, id string) string { return nodeURL(n, mint(t, sid, id, "node-1", "", time.Minute), id) }

	// 001 then 002 stored and idle (001 older), 003 playing
	for _, id := range []string{"sample-001", "sample-002"} {
		u := url("idle-"+id, id)
		sess := c.play(u)
		waitComplete(t, n, id)
		if res := c.do("TEARDOWN", u+"/", "Session", sess); res.StatusCode != 200 {
			t.Fatalf("TEARDOWN: %s", statusLine(res))
		}
	}
	c.play(url("p3", "sample-003"))
	waitComplete(t, n, "sample-003")

	c.play(url("p4", "sample-004"))
	waitComplete(t, n, "sample-004")
	if got, want := storedIDs(n), []string{"sample-002", "sample-003", "sample-004"}; !slices.Equal(got, want) {
		t.Fatalf("after the 4th fill: %v, want %v (LRU idle title evicted)", got, want)
	}
	if _, err := os.Stat(filepath.Join(n.DataDir, "titles", "sample-001.ts")); !os.IsNotExist(err) {
		t.Error("evicted file still on disk")
	}

	c.play(url("p5", "sample-005"))
	waitComplete(t, n, "sample-005")
	if got, want := storedIDs(n), []string{"sample-003", "sample-004", "sample-005"}; !slices.Equal(got, want) {
		t.Fatalf("after the 5th fill: %v, want %v", got, want)
	}

	// every stored title is playing: no room
	res := c.do("SETUP", url("p6", "sample-006")+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast;interleaved=20-21")
	if res.StatusCode != 453 {
		t.Fatalf("SETUP with a full disk of playing titles: %s", statusLine(res))
	}
	if got := storedIDs(n); len(got) != 3 || slices.Contains(got, "sample-006") {
		t.Fatalf("titles %v", got)
	}
	if o.fetchCount("sample-006") != 0 {
		t.Error("refused title was fetched")
	}
}

func TestCapacityLimits(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.Capacity.MaxSessions = 1 })
	c := dialRTSP(t, n)
	c.play(nodeURL(n, mint(t, "a", "sample-001", "node-1", "", time.Minute), "sample-001"))
	res := c.do("SETUP", nodeURL(n, mint(t, "b", "sample-001", "node-1", "", time.Minute), "sample-001")+"/trackID=0",
		"Transport", "RTP/AVP/TCP;unicast;interleaved=2-3")
	if res.StatusCode != 453 {
		t.Errorf("second session over MaxSessions=1: %s", statusLine(res))
	}
	n.SetDraining(true)
	res = c.do("DESCRIBE", nodeURL(n, mint(t, "d", "sample-001", "node-1", "", time.Minute), "sample-001"))
	if res.StatusCode != 503 {
		t.Errorf("DESCRIBE while draining: %s", statusLine(res))
	}
}
