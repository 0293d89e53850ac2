package vodnode

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"testing"
	"time"
)

// A multipart range request (several ranges) whose fill brings no byte
// has its status line out within requestTimeout (10 s), as a single
// range's (TestHTTPHeldStatusLineGoesOutAfterTheRequestTimeout), and its
// parts as the fill brings them. Its status line, released by the first
// part's header (ServeContent writes the parts from a goroutine of its
// own: no heldHeader), stayed in the connection's buffer until the fill's
// bytes, however long that took.
func TestHTTPMultipartStatusLineGoesOutBeforeTheFill(t *testing.T) {
	o := newFakeOrigin(t)
	o.holdFirst, o.release = true, make(chan struct{})
	t.Cleanup(o.unhold) // after the node's close
	data := o.titles["sample-001"]
	n := startNode(t, startOrigin(t, o), withHTTP)
	url := httpURL(n, mint(t, "held-multipart", "sample-001", "node-1", "", time.Minute), "sample-001.ts")
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Range", "bytes=0-99,1000-1099")
	type answer struct {
		res *http.Response
		err error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		got <- answer{res, err}
	}()
	var res *http.Response
	select {
	case a := <-got:
		if a.err != nil {
			t.Fatal(a.err)
		}
		res = a.res
	case <-time.After(requestTimeout + 5*time.Second):
		o.unhold()
		t.Fatalf("no status line %v after a multipart range request whose fill brings no byte, want it within %v", requestTimeout+5*time.Second, requestTimeout)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusPartialContent {
		t.Fatalf("multipart answer: %d, want 206", res.StatusCode)
	}
	o.unhold()
	_, params, err := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	mr := multipart.NewReader(res.Body, params["boundary"])
	for _, want := range [][]byte{data[0:100], data[1000:1100]} {
		p, err := mr.NextPart()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(p)
		if err != nil || !bytes.Equal(b, want) {
			t.Fatalf("part %q: %d bytes (%v), equal %v", p.Header.Get("Content-Range"), len(b), err, bytes.Equal(b, want))
		}
	}
}
