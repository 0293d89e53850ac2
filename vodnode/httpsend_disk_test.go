package vodnode

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"vodcluster/proto/logtest"
)

// A title's file that reads short of its index under the node (truncated
// on disk) cuts the viewer's download short; each such send counts one
// disk read error and logs a warning naming the title and the error,
// whether the bytes went with sendfile (the node's own HTTP server, and
// a handler's) or were copied (over HTTPS, or a send that fell back), and
// a progressive download or an HLS segment alike; the viewer is not
// taken for a stalled player (activityWriter.failed: only the socket's
// failures set it). A send that the connection copies instead of taking
// the file counts a fallback of cause "connection", logged once.
func TestHTTPSendDiskReadError(t *testing.T) {
	t.Parallel()
	o := newFakeOrigin(t)
	var log logtest.Buffer
	n := startNode(t, startOrigin(t, o), withHTTP, func(n *Node) {
		n.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	data := o.titles["sample-001"]
	tok := mint(t, "de", "sample-001", "node-1", "", time.Minute)
	if res, _ := get(t, httpURL(n, tok, "sample-001.ts"), "Range", "bytes=0-187"); res.StatusCode != http.StatusPartialContent {
		t.Fatalf("first packet: %d", res.StatusCode)
	}
	n.mu.Lock()
	hs := n.httpSessions["de"]
	n.mu.Unlock()
	waitFor(t, 10*time.Second, "fill", func() bool { return hs.t().View().Complete })
	hs.pacing.lim.Store(nil)

	// A ResponseWriter whose ReadFrom copies through Read, as a
	// connection that takes no file does: counted and logged once.
	const fellBack = `msg="HTTP send copied through the node instead of sendfile`
	for i := range 2 {
		w := &countCheckWriter{h: http.Header{}, counted: func() int64 { return 1 << 62 }}
		aw := &activityWriter{ResponseWriter: w}
		r := httptest.NewRequest(http.MethodGet, "/t", nil)
		serveContent(aw, r, "t.ts", hs.meta.Size, "", &titleReader{hs: hs, ctx: r.Context(), n: n, sendfile: true})
		if !bytes.Equal(w.got.Bytes(), data) {
			t.Fatalf("copied send %d: %d bytes, want %d", i, w.got.Len(), len(data))
		}
		if got := n.sendFallbacks()[fallbackConnection]; got != int64(i+1) {
			t.Fatalf("after %d copied sends: %d fallbacks counted (%v)", i+1, got, n.sendFallbacks())
		}
	}
	if c := strings.Count(log.String(), fellBack); c != 1 || !strings.Contains(log.String(), "cause=connection") {
		t.Errorf("the fallback logged %d times, want once with its cause:\n%s", c, log.String())
	}
	// A send whose connection fails with an error that does not say
	// whose (neither a deadline nor a closed connection) while the file
	// reads on: the viewer's.
	aw := &activityWriter{ResponseWriter: &failingWriter{h: http.Header{}, after: 100 << 10}}
	r := httptest.NewRequest(http.MethodGet, "/t", nil)
	serveContent(aw, r, "t.ts", hs.meta.Size, "", &titleReader{hs: hs, ctx: r.Context(), n: n, sendfile: true})
	if !aw.failed {
		t.Error("a send whose connection failed (the file readable) not taken for the viewer's failure")
	}
	if n.send.diskErrors.Load() != 0 {
		t.Fatalf("%d disk read errors before the file was cut", n.send.diskErrors.Load())
	}

	cut := int64(len(data) / 2)
	if err := os.Truncate(filepath.Join(n.DataDir, "titles", "sample-001.ts"), cut); err != nil {
		t.Fatal(err)
	}
	const warned = `level=WARN msg="reading a title's file failed during an HTTP send`
	expect := func(what string, errors int64, body []byte) {
		t.Helper()
		waitFor(t, 10*time.Second, what+": a disk read error counted", func() bool { return n.send.diskErrors.Load() >= errors })
		if got := n.send.diskErrors.Load(); got != errors {
			t.Errorf("%s: %d disk read errors counted, want %d", what, got, errors)
		}
		if int64(len(body)) > cut {
			t.Errorf("%s: %d bytes, from a file of %d", what, len(body), cut)
		}
		out := log.String()
		if c := strings.Count(out, warned); c != int(errors) {
			t.Errorf("%s: %d warnings, want %d:\n%s", what, c, errors, out)
		}
		last := out[strings.LastIndex(out, warned):]
		if !strings.Contains(last, "title=sample-001") || !strings.Contains(last, `err="unexpected EOF"`) {
			t.Errorf("%s: the warning does not name the title and the error: %s", what, last)
		}
	}
	// The node's HTTP server, with sendfile.
	res, body := get(t, httpURL(n, tok, "sample-001.ts"))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("download: %d", res.StatusCode)
	}
	expect("download", 1, body)

	// A handler serving the title with sendfile and copied, and a segment
	// copied: each counts one, and none marks a stalled player.
	type result struct{ failed bool }
	done := make(chan result, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		aw := &activityWriter{ResponseWriter: w}
		defer func() { done <- result{aw.failed} }()
		send := r.URL.Query().Get("copy") == ""
		if r.URL.Path == "/title" {
			serveContent(aw, r, "t.ts", hs.meta.Size, "", &titleReader{hs: hs, ctx: r.Context(), n: n, rc: http.NewResponseController(aw), stall: time.Minute, sendfile: send})
			return
		}
		seg := segmentAt{t: hs.t(), start: 188 * 10}
		serveContent(aw, r, "seg.ts", hs.meta.Size-seg.start, "", &pacedSection{rd: io.NewSectionReader(seg, 0, hs.meta.Size-seg.start), seg: seg, hs: hs, n: n, ctx: r.Context(), sendfile: send})
	}))
	defer srv.Close()
	fallbacks := n.sendFallbacks()
	for i, path := range []string{"/title", "/title?copy=1", "/seg", "/seg?copy=1"} {
		res, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		select {
		case r := <-done:
			if r.failed {
				t.Errorf("%s: the disk's error taken for the viewer's", path)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the handler did not return", path)
		}
		expect(path, int64(2+i), body)
	}
	if got := n.sendFallbacks(); got[fallbackConnection] != fallbacks[fallbackConnection] {
		t.Errorf("sendfile sends counted as copied: %v, before %v", got, fallbacks)
	}
	// The same failure where the file ends: the file's.
	aw = &activityWriter{ResponseWriter: &failingWriter{h: http.Header{}, after: 1 << 62}}
	r = httptest.NewRequest(http.MethodGet, "/t", nil)
	serveContent(aw, r, "t.ts", hs.meta.Size, "", &titleReader{hs: hs, ctx: r.Context(), n: n, sendfile: true})
	if aw.failed {
		t.Error("a send that failed where the file ends taken for the viewer's failure")
	}
	expect("a failed send at the file's end", 6, nil)
}

// failingWriter is a ResponseWriter whose ReadFrom copies up to after
// bytes in all, and fails, with an error that does not tell whose it
// is, there or where its source ends short of its limit.
type failingWriter struct {
	h     http.Header
	after int64
	got   int64
}

func (w *failingWriter) Header() http.Header { return w.h }
func (w *failingWriter) WriteHeader(int)     {}
func (w *failingWriter) Write(p []byte) (int, error) {
	w.got += int64(len(p))
	return len(p), nil
}

func (w *failingWriter) ReadFrom(r io.Reader) (int64, error) {
	lr := r.(*io.LimitedReader)
	n, _ := io.CopyN(io.Discard, lr, max(w.after-w.got, 0))
	w.got += n
	if w.got >= w.after || lr.N > 0 {
		return n, errors.New("send failed")
	}
	return n, nil
}
