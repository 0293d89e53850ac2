package vodnode

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"vodcluster/cdp"
)

// A title replaced at the origin by a file of another size, on a node
// whose catalog cache still has the old entry: the HTTP viewer gets the
// copy the node fills (the new file) whole. The session took the old
// size: a larger file was cut at it, and past the end of a smaller one
// the node's reader spun on a core forever, the session never ending.
func TestHTTPServesTheCopyOfATitleReplacedAtTheOrigin(t *testing.T) {
	for _, c := range []struct{ name, old, new string }{
		{"smaller", "clip-a.ts", "clip-c.ts"},
		{"larger", "clip-c.ts", "clip-a.ts"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			oldB, newB := clip(t, c.old), clip(t, c.new)
			if len(oldB) == len(newB) {
				t.Fatal("the clips have one size")
			}
			if err := os.WriteFile(filepath.Join(dir, "t1.ts"), oldB, 0o644); err != nil {
				t.Fatal(err)
			}
			srv := &cdp.Server{Dir: dir, Listen: "127.0.0.1:0", CatalogPoll: -1, Logger: slog.New(slog.DiscardHandler)}
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			n := startNode(t, srv.Addr(), func(n *Node) { n.HTTPListen = "127.0.0.1:0" })
			// The node reads the catalog (another viewer, a load report).
			if m, err := n.store.Lookup(context.Background(), "t1"); err != nil || m.Size != int64(len(oldB)) {
				t.Fatalf("lookup: %+v %v", m, err)
			}
			// The operator replaces t1.
			tmp := filepath.Join(dir, "t1.ts.new")
			if err := os.WriteFile(tmp, newB, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(dir, "t1.ts")); err != nil {
				t.Fatal(err)
			}
			if err := srv.Reload(); err != nil {
				t.Fatal(err)
			}
			tok := mint(t, "repl-"+c.name, "t1", "node-1", "", time.Minute)
			cl := &http.Client{Timeout: 30 * time.Second}
			res, err := cl.Get(httpURL(n, tok, "t1.ts"))
			if err != nil {
				t.Fatal(err)
			}
			body, rerr := io.ReadAll(res.Body)
			res.Body.Close()
			if res.Header.Get("Content-Length") != strconv.Itoa(len(newB)) || rerr != nil || !bytes.Equal(body, newB) {
				t.Fatalf("status %d Content-Length %s, %d bytes (%v); want the new file whole (%d bytes; the old one had %d)",
					res.StatusCode, res.Header.Get("Content-Length"), len(body), rerr, len(newB), len(oldB))
			}
		})
	}
}

// A fill the node's disk cannot start (its .part file cannot be created:
// here a directory in the way) is answered 503 with Retry-After, as the
// node's other fill failures, without the node's paths: it was 500 with
// the file's path.
func TestFillTheDiskCannotStartIs503(t *testing.T) {
	o := newFakeOrigin(t)
	dataDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dataDir, "titles", "sample-005.ts.part"), 0o755); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, startOrigin(t, o), func(n *Node) {
		n.HTTPListen = "127.0.0.1:0"
		n.DataDir = dataDir
	})
	res, b := get(t, httpURL(n, mint(t, "eisdir", "sample-005", "node-1", "", time.Minute), "sample-005.ts"))
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || strings.Contains(string(b), dataDir) || !n.store.DiskFault() {
		t.Fatalf("%d Retry-After %q %q (disk fault %v): want 503 with Retry-After, no path, and the disk fault reported",
			res.StatusCode, res.Header.Get("Retry-After"), b, n.store.DiskFault())
	}
}
