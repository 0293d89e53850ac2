package vodnode

import (
	"runtime"
	"testing"
	"time"
)

// TestESProbeOfEvictedCopyDropped: the elementary streams probed of a
// copy that was evicted (held by no session) leave the node's cache at
// the next probe of another title: the cache keeps neither the copy nor
// its probe.
func TestESProbeOfEvictedCopyDropped(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	describe := func(sid, title string) {
		t.Helper()
		waitPrefetch(t, n, title)
		c := dialRTSP(t, n)
		res := c.do("DESCRIBE", esURL(n, mint(t, sid, title, "node-1", "", time.Minute), title))
		if res.StatusCode != 200 {
			t.Fatalf("DESCRIBE %s: %s", title, statusLine(res))
		}
	}
	describe("gc-a", "sample-001")
	url := esURL(n, mint(t, "gc-a-play", "sample-001", "node-1", "", time.Minute), "sample-001")
	c := dialRTSP(t, n)
	c.do("DESCRIBE", url)
	res := c.do("SETUP", url+"/trackID=1", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	id := sessionID(res)
	if res := c.do("PLAY", url+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("PLAY: %s", statusLine(res))
	}
	if got := c.readMediaRTP(time.Second); len(got) == 0 {
		t.Fatal("no RTP in 1 s")
	}
	if res := c.do("TEARDOWN", url+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("TEARDOWN: %s", statusLine(res))
	}
	waitFor(t, 10*time.Second, "sample-001 evicted after the TEARDOWN", func() bool { return n.store.Evict("sample-001") == nil })
	for range 3 {
		runtime.GC()
	}
	describe("gc-b", "sample-002")
	n.mu.Lock()
	_, kept := n.esTracks["sample-001"]
	size := len(n.esTracks)
	n.mu.Unlock()
	if kept || size != 1 {
		t.Errorf("after sample-001's copy was evicted and sample-002 probed: sample-001's probe kept %v, %d probes cached, want 1", kept, size)
	}
}
