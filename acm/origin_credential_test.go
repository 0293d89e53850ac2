package acm

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/proto/token"
)

// An origin that refuses the manager's credential (its secret_file holds
// another secret) serves its health service to anyone: the manager must
// still count it unavailable, so that a title no node holds is refused at
// the front door (503) rather than sent to a node for a fill that cannot
// start. An origin that takes the credential counts as up.
func TestOriginRefusingTheCredentialCountsDown(t *testing.T) {
	for _, c := range []struct {
		name     string
		secret   []byte
		wantDown bool
	}{
		{"another secret", []byte("another cluster's secret, 32 bytes"), true},
		{"the cluster secret", testSecret, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := token.OriginCredential(c.secret)
			var probes atomic.Int64 // GetTitle calls: one a check
			o := startOrigin(t, "127.0.0.1:0", testTitles, token.Authorize(func(ctx context.Context, method string) error {
				if !strings.HasPrefix(method, "/vodcluster.v1.Origin/") {
					return nil // health: open, as the CDP's
				}
				if method == "/vodcluster.v1.Origin/GetTitle" {
					probes.Add(1)
				}
				return token.CheckBearer(ctx, want)
			})...)
			e := newManager(t, "", func(m *Manager) {
				m.OriginAddr = o.addr
				m.OriginCheck = 20 * time.Millisecond
			})
			if !c.wantDown {
				// once a check begins, the one before it has ended: the
				// checks that would have set it down have all ended
				waitFor(t, 5*time.Second, "more checks than set an origin down", func() bool { return probes.Load() > originDownAfter+1 })
				if e.m.originDown.Load() {
					t.Fatalf("origin taking the credential counted down after %d checks", probes.Load())
				}
				return
			}
			waitFor(t, 5*time.Second, "the origin seen down", func() bool { return e.m.originDown.Load() })
			res := e.describe("demo", "demo", "t2")
			if res.StatusCode != base.StatusServiceUnavailable {
				t.Fatalf("a title no node holds, origin refusing the credential: %d, want 503", res.StatusCode)
			}
		})
	}
}
