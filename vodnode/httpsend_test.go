package vodnode

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestHTTPSendfileSameBytes checks that what activityWriter.ReadFrom sends
// with sendfile (a segment with a PSI prefix longer than a sendChunk, a
// progressive download, whole and by ranges) is byte for byte what the
// copy through their Read sends.
func TestHTTPSendfileSameBytes(t *testing.T) {
	t.Parallel()
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o), withHTTP)
	data := o.titles["sample-001"]
	tok := mint(t, "sf", "sample-001", "node-1", "", time.Minute)
	if res, _ := get(t, httpURL(n, tok, "sample-001.ts"), "Range", "bytes=0-187"); res.StatusCode != http.StatusPartialContent {
		t.Fatalf("first packet: %d", res.StatusCode)
	}
	n.mu.Lock()
	hs := n.httpSessions["sf"]
	n.mu.Unlock()
	waitFor(t, 10*time.Second, "fill", func() bool { return hs.t().View().Complete })
	hs.pacing.lim.Store(nil)                                     // unpaced: the bytes, not the pace, are compared
	psi := bytes.Repeat([]byte{0x47, 1, 2, 3}, sendChunk/4+1000) // crosses a chunk
	start, end := int64(188*50), int64(len(data)-188*20)
	want := append(append([]byte{}, psi...), data[start:end]...)
	// the handler serves the section or the title with sendfile, or
	// through Read (?copy), and tells how many bytes went from the
	// title's file to the connection's ReadFrom
	fromFile := make(chan int64, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		send := r.URL.Query().Get("copy") == ""
		aw := &activityWriter{ResponseWriter: w}
		defer func() { fromFile <- aw.fileBytes }()
		if r.URL.Path == "/title" {
			rd := &titleReader{hs: hs, ctx: r.Context(), n: n, rc: http.NewResponseController(aw), stall: time.Minute, sendfile: send}
			serveContent(aw, r, "t.ts", hs.meta.Size, "", rd)
			return
		}
		seg := segmentAt{psi: psi, t: hs.t(), start: start}
		rd := &pacedSection{rd: io.NewSectionReader(seg, 0, int64(len(want))), seg: seg, hs: hs, n: n, ctx: r.Context(), sendfile: send}
		serveContent(aw, r, "seg.ts", rd.rd.Size(), "", rd)
	}))
	defer srv.Close()
	// fetch returns the body and the bytes of it sent from the file.
	fetch := func(path, rng string) ([]byte, int64) {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+path, nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-fromFile:
			return b, n
		case <-time.After(10 * time.Second):
			t.Fatalf("%s %q: the handler did not return", path, rng)
			return nil, 0
		}
	}
	psiLen := len(psi)
	for _, c := range []struct {
		path, rng string
		want      []byte
		file      int // of want, the bytes from the title's file (not the PSI prefix)
	}{
		{"/seg", "", want, len(want) - psiLen},
		{"/seg", fmt.Sprintf("bytes=100-%d", psiLen+5000), want[100 : psiLen+5001], 5001},
		{"/seg", fmt.Sprintf("bytes=%d-", psiLen+7), want[psiLen+7:], len(want) - psiLen - 7},
		{"/title", "", data, len(data)},
		{"/title", "bytes=1000-200000", data[1000:200001], 199001},
	} {
		got, sent := fetch(c.path, c.rng)
		copied, copiedSent := fetch(c.path+"?copy=1", c.rng)
		if !bytes.Equal(got, c.want) || !bytes.Equal(copied, c.want) {
			t.Errorf("%s %q: sendfile %d bytes, copy %d, want %d (equal: %v, %v)", c.path, c.rng, len(got), len(copied), len(c.want),
				bytes.Equal(got, c.want), bytes.Equal(copied, c.want))
		}
		// the same bytes because the sendfile path ran, not because it
		// fell back to the copy
		if sent != int64(c.file) || copiedSent != 0 {
			t.Errorf("%s %q: %d bytes from the file to the connection's ReadFrom (copy: %d), want %d (0)", c.path, c.rng, sent, copiedSent, c.file)
		}
	}
}

// countCheckWriter is a ResponseWriter with a ReadFrom, as net/http's is,
// that checks, whenever it is given bytes (the moment a viewer could have
// them), that the session counted them already (counted() at least all
// it was given).
type countCheckWriter struct {
	h       http.Header
	got     bytes.Buffer
	counted func() int64
	behind  int64 // the most it was given beyond the count
}

func (c *countCheckWriter) Header() http.Header { return c.h }
func (c *countCheckWriter) WriteHeader(int)     {}

func (c *countCheckWriter) Write(p []byte) (int, error) {
	c.got.Write(p)
	c.check()
	return len(p), nil
}

func (c *countCheckWriter) ReadFrom(r io.Reader) (int64, error) {
	n, err := io.Copy(writerOnly{&c.got}, r)
	c.check()
	return n, err
}

func (c *countCheckWriter) check() {
	c.behind = max(c.behind, int64(c.got.Len())-c.counted())
}

// A download sent with sendfile counts its bytes (the session's, the
// node's) before the viewer can have them, as the copy through Read
// does: a client that has read a whole title sees it in the node's
// Stats. They were counted once sendfile returned, and
// TestHTTPProgressiveAndRanges failed now and then, BytesSent one chunk
// short.
func TestHTTPSendfileCountsBeforeTheViewerHasTheBytes(t *testing.T) {
	t.Parallel()
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o), withHTTP)
	data := o.titles["sample-001"]
	tok := mint(t, "sc", "sample-001", "node-1", "", time.Minute)
	if res, _ := get(t, httpURL(n, tok, "sample-001.ts"), "Range", "bytes=0-187"); res.StatusCode != http.StatusPartialContent {
		t.Fatalf("first packet: %d", res.StatusCode)
	}
	n.mu.Lock()
	hs := n.httpSessions["sc"]
	n.mu.Unlock()
	waitFor(t, 10*time.Second, "fill", func() bool { return hs.t().View().Complete })
	hs.pacing.lim.Store(nil)
	psi := bytes.Repeat([]byte{0x47, 1, 2, 3}, sendChunk/4+1000) // crosses a chunk
	start := int64(188 * 50)
	for _, c := range []struct {
		name string
		rd   func(ctx context.Context) io.ReadSeeker
		size int64
		want []byte
	}{
		{"title", func(ctx context.Context) io.ReadSeeker {
			return &titleReader{hs: hs, ctx: ctx, n: n, sendfile: true}
		}, int64(len(data)), data},
		{"segment", func(ctx context.Context) io.ReadSeeker {
			seg := segmentAt{psi: psi, t: hs.t(), start: start}
			return &pacedSection{rd: io.NewSectionReader(seg, 0, int64(len(psi))+int64(len(data))-start), seg: seg, hs: hs, n: n, ctx: ctx, sendfile: true}
		}, int64(len(psi)) + int64(len(data)) - start, append(append([]byte{}, psi...), data[start:]...)},
	} {
		base := hs.bytes.Load()
		w := &countCheckWriter{h: http.Header{}, counted: func() int64 { return hs.bytes.Load() - base }}
		aw := &activityWriter{ResponseWriter: w}
		r := httptest.NewRequest(http.MethodGet, "/"+c.name, nil)
		serveContent(aw, r, c.name+".ts", c.size, "", c.rd(r.Context()))
		if !bytes.Equal(w.got.Bytes(), c.want) || aw.fileBytes == 0 {
			t.Fatalf("%s: %d bytes (%d from the file), want %d", c.name, w.got.Len(), aw.fileBytes, len(c.want))
		}
		if w.behind > 0 {
			t.Errorf("%s: the viewer had up to %d bytes the session had not counted", c.name, w.behind)
		}
	}
}
