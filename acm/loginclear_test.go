package acm

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"google.golang.org/grpc/codes"

	pb "vodcluster/proto/vodcluster/v1"
)

// An operator unlocks a subscriber refused for its failed logins: its
// next correct login passes at once, and the answer says what was
// forgotten. Another address's limit over all names is left.
func TestClearLoginFailures(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.LoginFailures = 3 })
	e.startNode("n1", nodeOpts{})
	for i := range 3 {
		if res := e.describe("demo", "wrong"+strconv.Itoa(i), "t1"); res.StatusCode != base.StatusUnauthorized {
			t.Fatalf("wrong password %d: %d", i, res.StatusCode)
		}
	}
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusServiceUnavailable {
		t.Fatalf("after 3 failures: %d, want 503 (too many failed logins)", res.StatusCode)
	}
	ctx := context.Background()
	if _, err := e.admin.ClearLoginFailures(ctx, &pb.ClearLoginFailuresRequest{}); grpcCode(err) != codes.InvalidArgument {
		t.Fatalf("no user: %v", err)
	}
	r, err := e.admin.ClearLoginFailures(ctx, &pb.ClearLoginFailuresRequest{User: "demo"})
	if err != nil || r.Addresses != 1 || !r.OverAllAddresses {
		t.Fatalf("unlock demo: %+v, %v; want 1 address and over all addresses", r, err)
	}
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("after the unlock: %d, want 302", res.StatusCode)
	}
	if r, err := e.admin.ClearLoginFailures(ctx, &pb.ClearLoginFailuresRequest{User: "demo"}); err != nil || r.Addresses != 0 || r.OverAllAddresses {
		t.Fatalf("unlock again: %+v, %v; want nothing forgotten", r, err)
	}
}

// clearUser makes the user name's buckets whole (at every address and
// over all addresses), not an address's over all names, nor another
// user's.
func TestLoginGuardClearUser(t *testing.T) {
	g := newLoginGuard(2, 10*time.Second)
	t0 := time.Unix(1_000_000, 0)
	for i := range 20 {
		guess(g, "10.0.0.9", "u"+strconv.Itoa(i), t0, true) // the address's 20
	}
	guess(g, "10.0.0.1", "alice", t0, true)
	guess(g, "10.0.0.1", "alice", t0, true)
	guess(g, "10.0.0.2", "alice", t0, true)
	guess(g, "10.0.0.1", "bob", t0, true)
	guess(g, "10.0.0.1", "bob", t0, true)
	if n, all := g.clearUser("alice", t0); n != 2 || !all {
		t.Fatalf("cleared %d addresses, over all %v; want 2, true", n, all)
	}
	if !guess(g, "10.0.0.1", "alice", t0, false) {
		t.Fatal("alice still refused after the clear")
	}
	if guess(g, "10.0.0.1", "bob", t0, false) {
		t.Fatal("bob's failures cleared with alice's")
	}
	if guess(g, "10.0.0.9", "alice", t0, false) {
		t.Fatal("the address's limit over all names cleared")
	}
}
