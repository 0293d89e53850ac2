package vodnode

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"vodcluster/cdp/tsindex"
)

// TestHLSSegmentPastTheTitleWhileFilling: a segment numbered past any
// its title can have is 404 at once while the title fills, as once it is
// complete (it waited 10 s for the fill, then was 503 "not filled yet");
// one the title will have, not filled yet, is still waited for.
func TestHLSSegmentPastTheTitleWhileFilling(t *testing.T) {
	t.Parallel()
	o := heldOrigin(t, 0)
	data := o.titles["sample-001"] // 20 s: five segments of about 4 s
	o.holdAt = int64(len(data)*2/5) / 188 * 188
	n := startNode(t, startOrigin(t, o), withHTTP)
	tok := mint(t, "hls-past", "sample-001", "node-1", "", time.Minute)
	if res, _ := get(t, httpURL(n, tok, "sample-001/seg-0.ts")); res.StatusCode != http.StatusOK {
		t.Fatalf("segment 0, filled: %d", res.StatusCode)
	}
	ask := func(seg string, d time.Duration) (int, string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, httpURL(n, tok, "sample-001/"+seg), nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return res.StatusCode, string(b), err
	}
	// well under the node's 10 s wait for the fill
	if code, body, err := ask("seg-50.ts", 3*time.Second); err != nil || code != http.StatusNotFound || strings.TrimSpace(body) != "no such segment" {
		t.Fatalf("segment 50 of a 20 s title being filled: %d %q (%v), want 404 no such segment at once", code, body, err)
	}
	// Segment 3 (12 to 16 s) comes with the fill: waited for, not 404.
	if code, body, err := ask("seg-3.ts", 500*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("segment 3, not filled yet: %d %q (%v), want it waited for", code, body, err)
	}
	o.unhold()
	if code, _, err := ask("seg-3.ts", 10*time.Second); err != nil || code != http.StatusOK {
		t.Fatalf("segment 3 once filled: %d (%v)", code, err)
	}
}

// TestHLSSegmentsBound: the bound on a filling title's segments is never
// below the segments the complete title has, whatever part is filled.
func TestHLSSegmentsBound(t *testing.T) {
	for _, name := range []string{"clip-a.ts", "clip-b.ts", "clip-c.ts"} {
		data := clip(t, name)
		full, err := tsindex.BuildFrom(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		want := len(segments(full, true))
		for k := 0; k < 20; k++ {
			part, err := tsindex.BuildFrom(bytes.NewReader(data[:len(data)*k/20/188*188]))
			if err != nil {
				t.Fatal(err)
			}
			if most, ok := segmentsBound(part, full.Duration()); !ok || most < want || most > 2*want+4 {
				t.Errorf("%s filled %d/20: at most %d segments (%v); it has %d", name, k, most, ok, want)
			}
		}
	}
}
