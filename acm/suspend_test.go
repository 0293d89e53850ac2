package acm

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"google.golang.org/grpc/codes"

	pb "vodcluster/proto/vodcluster/v1"
)

// The operator suspends a subscriber: its new title requests are refused
// (RTSP and HTTP 403), other subscribers' are not, the suspension is
// listed and outlives a manager restart, and lifting it lets the
// subscriber in again. Bad requests are refused with INVALID_ARGUMENT or
// NOT_FOUND.
func TestSuspendSubscriber(t *testing.T) {
	dir := t.TempDir()
	e := newManager(t, dir, nil)
	e.startNode("n1", nodeOpts{})
	ctx := context.Background()
	s, err := e.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "demo", DurationS: 3600, Reason: "account shared"})
	if err != nil || s.GetUntilUnixMs()-s.GetSinceUnixMs() != 3_600_000 {
		t.Fatalf("suspend: %v %v", s, err)
	}
	check := func(when string, want base.StatusCode) {
		t.Helper()
		if res := e.describe("demo", "demo", "t1"); res.StatusCode != want {
			t.Fatalf("%s: DESCRIBE of demo: %d %s, want %d", when, res.StatusCode, res.StatusMessage, want)
		}
	}
	check("suspended", base.StatusForbidden)
	if res := e.get(http.MethodGet, "/vod/t1.ts", "demo", "demo"); res.StatusCode != http.StatusForbidden {
		t.Fatalf("suspended: HTTP GET of demo: %d, want 403", res.StatusCode)
	}
	if res := e.describe("kid", "kid", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("another subscriber: %d, want 302", res.StatusCode)
	}
	list, err := e.admin.ListSuspensions(ctx, &pb.ListSuspensionsRequest{})
	if err != nil || len(list.GetSuspensions()) != 1 || list.GetSuspensions()[0].GetUser() != "demo" || list.GetSuspensions()[0].GetReason() != "account shared" {
		t.Fatalf("list: %v %v", list, err)
	}

	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e = newManager(t, dir, nil)
	e.startNode("n1", nodeOpts{})
	check("suspended, after a restart", base.StatusForbidden)

	if _, err := e.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "demo"}); err != nil {
		t.Fatalf("lift: %v", err)
	}
	check("lifted", base.StatusFound)
	if list, _ := e.admin.ListSuspensions(ctx, &pb.ListSuspensionsRequest{}); len(list.GetSuspensions()) != 0 {
		t.Fatalf("after the lift: %v", list)
	}

	for _, c := range []struct {
		req  *pb.SuspendRequest
		code codes.Code
	}{
		{&pb.SuspendRequest{DurationS: 60}, codes.InvalidArgument},
		{&pb.SuspendRequest{User: "demo", DurationS: -1}, codes.InvalidArgument},
		{&pb.SuspendRequest{User: "demo", DurationS: 400 * 86400}, codes.InvalidArgument},
		{&pb.SuspendRequest{User: "demo", DurationS: 60, Reason: "bad\x01reason"}, codes.InvalidArgument},
		// A newline split the suspension table; 3 MB names were stored and logged whole.
		{&pb.SuspendRequest{User: "demo\nroot", DurationS: 60}, codes.InvalidArgument},
		{&pb.SuspendRequest{User: "nul\x00", DurationS: 60}, codes.InvalidArgument},
		// C1 controls: U+0085 (NEL) breaks a line for some readers,
		// U+009B (CSI) starts a terminal's escape sequence.
		{&pb.SuspendRequest{User: "demo\u0085root", DurationS: 60}, codes.InvalidArgument},
		{&pb.SuspendRequest{User: "demo\u009b2J", DurationS: 60}, codes.InvalidArgument},
		{&pb.SuspendRequest{User: "demo", DurationS: 60, Reason: "bad\u009breason"}, codes.InvalidArgument},
		{&pb.SuspendRequest{User: strings.Repeat("u", 257), DurationS: 60}, codes.InvalidArgument},
		{&pb.SuspendRequest{User: "demo"}, codes.NotFound}, // not suspended any more
	} {
		if _, err := e.admin.SuspendSubscriber(ctx, c.req); grpcCode(err) != c.code {
			t.Errorf("%v: %v, want %v", c.req, err, c.code)
		}
	}
}

// A suspension of a name the operator may no longer give (stored before
// names were checked: a newline in it, or megabytes of it) can still be
// lifted: it stayed in force and in the table up to a year otherwise.
func TestLiftSuspensionOfUncheckedName(t *testing.T) {
	e := newManager(t, t.TempDir(), nil)
	ctx := context.Background()
	bad := []string{"demo\nroot", strings.Repeat("u", 300)}
	now := e.m.now()
	e.m.mu.Lock()
	for _, u := range bad {
		e.m.suspended[u] = suspension{Until: now.Add(time.Hour), Since: now, Reason: "stored before the check"}
	}
	e.m.mu.Unlock()
	for _, u := range bad {
		if _, err := e.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: u}); err != nil {
			t.Errorf("lift of %.20q: %v", u, err)
		}
		if _, err := e.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: u}); grpcCode(err) != codes.NotFound {
			t.Errorf("second lift of %.20q: %v, want NotFound", u, err)
		} else if len(err.Error()) > 200 {
			t.Errorf("second lift: the error echoes the name whole (%d bytes)", len(err.Error()))
		}
	}
	if list, _ := e.admin.ListSuspensions(ctx, &pb.ListSuspensionsRequest{}); len(list.GetSuspensions()) != 0 {
		t.Fatalf("after the lifts: %v", list)
	}
}

// A subscriber name or an operator's reason that is not printable text is
// refused: C0, DEL and C1 controls, and invalid UTF-8, which a Go client
// cannot send (proto3 strings are checked as it marshals) but another
// client can. Non-ASCII letters are text.
func TestBadUserAndReasonText(t *testing.T) {
	for _, c := range []struct {
		s   string
		bad bool
	}{
		{"alice", false}, {"zoë", false}, {"用户", false}, {"a\u00a0b", false}, // U+00A0: the first after C1
		{"a\nb", true}, {"a\x7fb", true}, {"a\u0080b", true}, {"a\u0085b", true}, {"a\u009fb", true},
		{"a\xffb", true}, {"a\xc2", true}, {"a\xed\xa0\x80b", true}, // a lone byte, a cut sequence, a surrogate
	} {
		if got := badUser(c.s); got != c.bad {
			t.Errorf("badUser(%q) = %v, want %v", c.s, got, c.bad)
		}
		if got := badReason(c.s); got != c.bad {
			t.Errorf("badReason(%q) = %v, want %v", c.s, got, c.bad)
		}
	}
}
