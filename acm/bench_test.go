package acm

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	pb "vodcluster/proto/vodcluster/v1"
)

// BenchmarkRTSPDescribeToRedirect measures one admission through the RTSP
// front door on one connection: Basic check (cached after the first),
// entitlement, lsm placement, the session written to badger
// (synchronously), the token signed and the 302 written. Each session is
// ended by a node event outside the timer so capacity never runs out.
func BenchmarkRTSPDescribeToRedirect(b *testing.B) {
	// One subscriber asks as fast as it can: no requests_per_user limit.
	e := newManager(b, "", func(m *Manager) { m.RequestsPerUser = -1 })
	n := e.startNode("n1", nodeOpts{egress: 2 * titleBps})
	c := e.dialRTSP()
	h := basicHeader("demo", "demo")
	b.ResetTimer()
	for b.Loop() {
		res, err := c.do(base.Describe, "/vod/t1", h)
		if err != nil || res.StatusCode != base.StatusFound {
			b.Fatalf("%v %v", res, err)
		}
		b.StopTimer()
		sid, err := e.signer.Parse(tokenFromLocation(res.Header["Location"][0]))
		if err != nil {
			b.Fatal(err)
		}
		if err := n.event(sid.Session, pb.SessionEvent_KIND_ENDED); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkDigestCheck measures the front door's Digest path: header
// parse, nonce HMAC check, the response check against the HA1, and the
// replay cache (each answer is accepted once: the requests count up nc,
// as a client's do, their headers made before the timer starts).
func BenchmarkDigestCheck(b *testing.B) {
	e := newManager(b, "", nil)
	c := e.dialRTSP()
	nonce := e.m.nonces.Issue(timeNow())
	authz := make([]string, b.N)
	for i := range authz {
		authz[i] = digestHeaderNC("demo", "demo", "vodcluster", nonce, "DESCRIBE", c.url("/vod/t1"), fmt.Sprintf("%08x", i+1))["Authorization"][0]
	}
	ctx := b.Context()
	target, err := url.Parse(c.url("/vod/t1"))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		if _, _, err := e.m.authenticate(ctx, "DESCRIBE", target, authz[i], "127.0.0.1", true); err != nil {
			b.Fatal(err)
		}
	}
}
