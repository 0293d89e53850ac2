package vodnode

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestFillSharedAndFast: two viewers of a title not on disk share one
// origin fetch, the first media arrives long before the slow fill
// completes, both decode, and the title is on disk afterwards.
func TestFillSharedAndFast(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	o := newFakeOrigin(t)
	o.delay = 300 * time.Millisecond
	o.rate = 200 << 10 // bytes/s: the 1.5 MB title takes about 7 s
	n := startNode(t, startOrigin(t, o))
	done := o.doneCh("sample-002")

	// a scripted viewer measures the first RTP packet after PLAY
	c := dialRTSP(t, n)
	url := nodeURL(n, mint(t, "first", "sample-002", "node-1", "", time.Minute), "sample-002")
	c.play(url)
	playAt := time.Now()
	ch, _, err := c.frame()
	if err != nil || ch != 0 {
		t.Fatalf("first frame: ch %d %v", ch, err)
	}
	first := time.Since(playAt)
	select {
	case <-done:
		t.Fatal("the fill completed before the first packet")
	default:
	}
	if first > 1500*time.Millisecond {
		t.Errorf("first RTP packet %v after PLAY", first)
	}
	t.Logf("first RTP packet %v after PLAY", first)

	// two real clients at once
	var wg sync.WaitGroup
	results := make([]ffmpegResult, 2)
	for i, tr := range []string{"tcp", "udp"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := mint(t, "viewer-"+tr, "sample-002", "node-1", "", time.Minute)
			results[i] = runFFmpeg(t, nodeURL(n, tok, "sample-002"), tr, 3)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.frames < 60 {
			t.Errorf("viewer %d decoded %d frames\n%s", i, r.frames, r.stderr)
		}
	}
	if f := o.fetchCount("sample-002"); f != 1 {
		t.Errorf("%d origin fetches, want 1", f)
	}
	if s := n.Stats(); s.FillsStarted["sample-002"] != 1 {
		t.Errorf("fills started %v", s.FillsStarted)
	}
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("fill did not complete")
	}
	dir := filepath.Join(n.DataDir, "titles")
	waitFor(t, 5*time.Second, "title renamed", func() bool {
		_, err := os.Stat(filepath.Join(dir, "sample-002.ts"))
		return err == nil
	})
	if _, err := os.Stat(filepath.Join(dir, "sample-002.ts.part")); !os.IsNotExist(err) {
		t.Errorf(".part left behind: %v", err)
	}
	if st, _ := os.Stat(filepath.Join(dir, "sample-002.ts")); st.Size() != int64(len(o.titles["sample-002"])) {
		t.Errorf("stored %d bytes", st.Size())
	}
	if got := n.Stats().OriginBytes; got != int64(len(o.titles["sample-002"])) {
		t.Errorf("origin bytes %d", got)
	}
}

// TestFillFailureEndsViewers: when the origin keeps failing mid-fill for
// longer than FillRetryFor, the viewer's session ends and the .part file is
// removed.
func TestFillFailureEndsViewers(t *testing.T) {
	o := newFakeOrigin(t)
	o.rate = 100 << 10
	o.fail.Store(true)
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.FillRetryFor = 500 * time.Millisecond })
	c := dialRTSP(t, n)
	c.play(nodeURL(n, mint(t, "f1", "sample-003", "node-1", "", time.Minute), "sample-003"))
	waitFor(t, 10*time.Second, "session ended", func() bool { return n.Stats().Sessions == 0 })
	dir := filepath.Join(n.DataDir, "titles")
	for _, f := range []string{"sample-003.ts.part", "sample-003.ts"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s exists after a failed fill", f)
		}
	}
	if len(n.Titles()) != 0 {
		t.Errorf("titles after a failed fill: %+v", n.Titles())
	}
	if f := o.fetchCount("sample-003"); f < 2 {
		t.Errorf("%d origin transfers, want retries before the fill failed", f)
	}
}
