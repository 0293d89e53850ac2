package vodnode

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/vodnode/store"
)

// retryAfterOf returns res's Retry-After ("" when it has none).
func retryAfterOf(res *base.Response) string {
	if v := res.Header["Retry-After"]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// TestRTSP503RetryAfter: the node's RTSP 503s carry Retry-After (RFC 2326
// §12.31) where asking again may succeed, as its HTTP 503s do: a DESCRIBE
// and a SETUP refused while the node drains; not an elementary-stream
// DESCRIBE whose title's fill the origin refused (the node's credential is
// not the origin's: no retry succeeds until an operator fixes it), nor a
// DESCRIBE at a node whose catalog read the origin refuses so.
func TestRTSP503RetryAfter(t *testing.T) {
	o := newFakeOrigin(t)
	addr, auth := startAuthOrigin(t, o)
	n := startNode(t, addr, withHTTP)

	n.SetDraining(true)
	u := nodeURL(n, mint(t, "ra-describe", "sample-001", "node-1", "", time.Minute), "sample-001")
	if res := dialRTSP(t, n).do("DESCRIBE", u, "Accept", "application/sdp"); res.StatusCode != 503 || retryAfterOf(res) != retryAfter {
		t.Errorf("DESCRIBE while draining: %s, Retry-After %q; want 503 with Retry-After %s", statusLine(res), retryAfterOf(res), retryAfter)
	}
	u = nodeURL(n, mint(t, "ra-setup", "sample-001", "node-1", "", time.Minute), "sample-001")
	if res := dialRTSP(t, n).do("SETUP", u+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast"); res.StatusCode != 503 || retryAfterOf(res) != retryAfter {
		t.Errorf("SETUP while draining: %s, Retry-After %q; want 503 with Retry-After %s", statusLine(res), retryAfterOf(res), retryAfter)
	}
	if res, _ := get(t, httpURL(n, mint(t, "ra-http", "sample-001", "node-1", "", time.Minute), "sample-001.ts")); res.StatusCode != http.StatusServiceUnavailable ||
		res.Header.Get("Retry-After") != retryAfter {
		t.Errorf("HTTP while draining: %d, Retry-After %q; want 503 with Retry-After %s", res.StatusCode, res.Header.Get("Retry-After"), retryAfter)
	}
	n.SetDraining(false)

	cacheCatalog(t, n, "sample-004")
	auth.setSecret([]byte("another-cluster-secret-0123456789"))
	u = nodeURL(n, mint(t, "ra-es", "sample-004", "node-1", "", time.Minute), "sample-004") + "/es"
	if res := dialRTSP(t, n).do("DESCRIBE", u, "Accept", "application/sdp"); res.StatusCode != 503 || retryAfterOf(res) != "" {
		t.Errorf("ES DESCRIBE of a title whose fill the origin refused: %s, Retry-After %q; want 503 without Retry-After", statusLine(res), retryAfterOf(res))
	}

	// A node whose catalog the origin never gave it (it refuses the
	// node's credential from the start): the catalog's read is refused
	// (UNAUTHENTICATED), which no retry mends soon.
	addr2, auth2 := startAuthOrigin(t, newFakeOrigin(t))
	auth2.setSecret([]byte("another-cluster-secret-0123456789"))
	n2 := startNode(t, addr2, withHTTP)
	u = nodeURL(n2, mint(t, "ra-catalog", "sample-001", "node-1", "", time.Minute), "sample-001")
	if res := dialRTSP(t, n2).do("DESCRIBE", u, "Accept", "application/sdp"); res.StatusCode != 503 || retryAfterOf(res) != "" {
		t.Errorf("DESCRIBE at a node whose catalog the origin refuses: %s, Retry-After %q; want 503 without Retry-After", statusLine(res), retryAfterOf(res))
	}
	if res, _ := get(t, httpURL(n2, mint(t, "ra-catalog-http", "sample-001", "node-1", "", time.Minute), "sample-001.ts")); res.StatusCode != http.StatusServiceUnavailable ||
		res.Header.Get("Retry-After") != "" {
		t.Errorf("HTTP at a node whose catalog the origin refuses: %d, Retry-After %q; want 503 without Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
}

// TestUnavailableRetryAfter: a 503 whose cause is the origin away, or
// none (the node's state), has Retry-After; one whose cause is the origin
// refusing the node or not having the title has none.
func TestUnavailableRetryAfter(t *testing.T) {
	for _, c := range []struct {
		cause error
		want  string
	}{
		{nil, retryAfter},
		{fmt.Errorf("%w: %w", store.ErrFillFailed, status.Error(codes.Unavailable, "origin away")), retryAfter},
		{fmt.Errorf("%w: %w", store.ErrOrigin, errors.New("dial tcp: connection refused")), retryAfter},
		{fmt.Errorf("%w: %w", store.ErrFillFailed, status.Error(codes.Unauthenticated, "bad credential")), ""},
		{fmt.Errorf("%w: %w", store.ErrFillFailed, status.Error(codes.PermissionDenied, "not yours")), ""},
		{fmt.Errorf("%w: %w", store.ErrFillFailed, status.Error(codes.NotFound, "gone")), ""},
	} {
		e := unavailable(c.cause, "test")
		var got string
		if v := e.header["Retry-After"]; len(v) > 0 {
			got = v[0]
		}
		if e.code != base.StatusServiceUnavailable || got != c.want {
			t.Errorf("cause %v: %d, Retry-After %q; want 503, %q", c.cause, e.code, got, c.want)
		}
		if res := errResponse(e); retryAfterOf(res) != c.want || !strings.HasPrefix(string(res.Body), "test") {
			t.Errorf("cause %v: RTSP answer's Retry-After %q, want %q", c.cause, retryAfterOf(res), c.want)
		}
	}
}
