package vodnode

import (
	"bytes"
	"io"
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
	o := newFakeOrigin(t)
	o.holdFirst, o.release = true, make(chan struct{})
	t.Cleanup(o.unhold) // after the node's close
	data := o.titles["sample-001"]
	n := startNode(t, startOrigin(t, o), withHTTP)
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
		string(a.body) != "title unavailable: its fill did not bring the bytes asked for within 10s\n" {
		t.Errorf("HLS playlist of a title whose fill brings no byte: %d %q, want 503 saying so", a.res.StatusCode, a.body)
	}
	o.unhold()
	body, err := io.ReadAll(res.Body)
	if err != nil || !bytes.Equal(body, data[:100000]) {
		t.Fatalf("body once the fill came: %d of 100000 bytes (%v), equal %v", len(body), err, bytes.Equal(body, data[:100000]))
	}
}
