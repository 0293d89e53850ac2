package vodnode

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"vodcluster/proto/logtest"
)

// TestCopyCutShortIsFilledAgain: a complete copy cut short behind the
// node's back (truncated on disk while the node runs) fails the viewer it
// is read for, and is dropped then, logged: the title's next viewer gets
// it whole, filled again from the origin, and the node's report no
// longer lists the damaged copy meanwhile. (It was kept: every viewer of
// the title on the node failed the same way until an operator evicted
// it, which the failed viewers' own sessions held back.)
func TestCopyCutShortIsFilledAgain(t *testing.T) {
	o := newFakeOrigin(t)
	var log logtest.Buffer
	n := startNode(t, startOrigin(t, o), withHTTP, func(n *Node) {
		n.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	const title = "short-002"
	data := o.titles[title]
	res, body := get(t, httpURL(n, mint(t, "cut-1", title, "node-1", "", time.Minute), title+".ts"))
	if res.StatusCode != 200 || !bytes.Equal(body, data) {
		t.Fatalf("first download: %d, %d bytes of %d", res.StatusCode, len(body), len(data))
	}
	waitFor(t, 10*time.Second, "the fill complete", func() bool {
		for _, st := range n.store.Titles() {
			if st.ID == title && !st.Filling {
				return true
			}
		}
		return false
	})
	if err := os.Truncate(filepath.Join(n.DataDir, "titles", title+".ts"), int64(len(data)/2)); err != nil {
		t.Fatal(err)
	}
	_, body = get(t, httpURL(n, mint(t, "cut-2", title, "node-1", "", time.Minute), title+".ts"))
	if len(body) >= len(data) {
		t.Fatalf("a download of the cut copy got %d bytes of %d", len(body), len(data))
	}
	waitFor(t, 10*time.Second, "the damaged copy dropped", func() bool {
		return strings.Contains(log.String(), `msg="damaged copy dropped`)
	})
	for _, st := range n.store.Titles() {
		if st.ID == title {
			t.Errorf("the damaged copy still listed: %+v", st)
		}
	}
	res, body = get(t, httpURL(n, mint(t, "cut-3", title, "node-1", "", time.Minute), title+".ts"))
	if res.StatusCode != 200 || !bytes.Equal(body, data) {
		t.Errorf("the next viewer: %d, %d bytes of %d (the whole title)", res.StatusCode, len(body), len(data))
	}
	if got := o.fetchCount(title); got != 2 {
		t.Errorf("%d fills from the origin, want 2 (the first and the one after the copy was dropped)", got)
	}
}
