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

// A progressive download (here its first 100 kB, as a player's first
// range) whose fill brings no byte holds its status line
// (heldHeader) for requestTimeout (10 s) at most, then answers 200 or 206 and
// sends the body as the fill brings it: a player sees its answer within
// its own timeouts and waits for the bytes, as from a slow origin, rather
// than hearing nothing until the fill's first byte (or a 503 for a fill
// that is only slow). The origin here holds the fill's first byte until
// the answer came, so the status line cannot have waited for a byte.
// An HLS playlist asked for meanwhile is answered 503 at 10 s, saying
// that the fill brought nothing in that time (it said "context deadline
// exceeded").
func TestHTTPHeldStatusLineGoesOutAfterTheRequestTimeout(t *testing.T) {
	o, n, data := heldFill(t)
	url := httpURL(n, mint(t, "held-status", "sample-001", "node-1", "", time.Minute), "sample-001.ts")
	// The timeout bounds the test where the answer would wait for the
	// held fill (forever); it measures nothing.
	client := &http.Client{Timeout: 3 * requestTimeout}
	type answer struct {
		res  *http.Response
		body []byte
		err  error
	}
	playlist := make(chan answer, 1)
	go func() {
		res, err := client.Get(httpURL(n, mint(t, "held-hls", "sample-002", "node-1", "", time.Minute), "sample-002/index.m3u8"))
		a := answer{res: res, err: err}
		if err == nil {
			a.body, a.err = io.ReadAll(res.Body)
			res.Body.Close()
		}
		playlist <- a
	}()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Range", "bytes=0-99999")
	asked := time.Now()
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("download of a title whose fill brings no byte: %v, want its status line after %s", err, requestTimeout)
	}
	defer res.Body.Close()
	held := time.Since(asked)
	if res.StatusCode != http.StatusPartialContent || res.Header.Get("Content-Length") != "100000" {
		t.Fatalf("answer to a range whose fill brings no byte: %d (Content-Length %q), want 206 for 100000 bytes", res.StatusCode, res.Header.Get("Content-Length"))
	}
	if held < requestTimeout {
		t.Errorf("status line out %v after the request with no byte of the fill, want it held %v", held, requestTimeout)
	}
	if a := <-playlist; a.err != nil {
		t.Errorf("HLS playlist of a title whose fill brings no byte: %v", a.err)
	} else if a.res.StatusCode != http.StatusServiceUnavailable ||
		string(a.body) != "not filled yet: the title's fill did not bring the bytes asked for within 10s; try again\n" {
		t.Errorf("HLS playlist of a title whose fill brings no byte: %d %q, want 503 saying so", a.res.StatusCode, a.body)
	}
	o.unhold()
	body, err := io.ReadAll(res.Body)
	if err != nil || !bytes.Equal(body, data[:100000]) {
		t.Fatalf("body once the fill came: %d of 100000 bytes (%v), equal %v", len(body), err, bytes.Equal(body, data[:100000]))
	}
}

// heldFill starts a node over an origin that holds every fill's first
// byte until o.unhold (or the test's end), and returns them with the
// bytes of sample-001.
func heldFill(t *testing.T) (o *fakeOrigin, n *Node, data []byte) {
	o = newFakeOrigin(t)
	o.holdFirst, o.release = true, make(chan struct{})
	t.Cleanup(o.unhold) // after the node's close
	return o, startNode(t, startOrigin(t, o), withHTTP), o.titles["sample-001"]
}

// A multipart range request (several ranges) whose fill brings no byte
// has its status line out within requestTimeout (10 s), as a single
// range's (TestHTTPHeldStatusLineGoesOutAfterTheRequestTimeout), and its
// parts as the fill brings them. Its status line, released by the first
// part's header (ServeContent writes the parts from a goroutine of its
// own: no heldHeader), stayed in the connection's buffer until the fill's
// bytes, however long that took.
func TestHTTPMultipartStatusLineGoesOutBeforeTheFill(t *testing.T) {
	o, n, data := heldFill(t)
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
