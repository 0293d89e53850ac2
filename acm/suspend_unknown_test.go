package acm

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// A suspension of a name the users file does not hold (a misspelt
// subscriber, or one not yet added) is kept, as before, but the answer
// says the name is unknown: it was a plain "suspended until", and the
// operator believed the subscriber meant was stopped while it could still
// play. A known subscriber's answer says nothing of the kind.
func TestSuspendUnknownSubscriberSaysSo(t *testing.T) {
	e := newManager(t, t.TempDir(), nil)
	ctx := context.Background()
	known, err := e.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "demo", DurationS: 60})
	if err != nil || known.GetUserUnknown() {
		t.Fatalf("suspend of demo (in the users file): %v %v; want no user_unknown", known, err)
	}
	typo, err := e.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "dmeo", DurationS: 60})
	if err != nil || !typo.GetUserUnknown() || typo.GetUntilUnixMs() == 0 {
		t.Fatalf("suspend of dmeo (not in the users file): %v %v; want it kept and user_unknown", typo, err)
	}
	list, err := e.admin.ListSuspensions(ctx, &pb.ListSuspensionsRequest{})
	if err != nil || len(list.GetSuspensions()) != 2 {
		t.Fatalf("list: %v %v; want both suspensions kept", list, err)
	}
	// The list marks the unknown name too: it showed it as any other.
	for _, s := range list.GetSuspensions() {
		if s.GetUserUnknown() != (s.GetUser() == "dmeo") {
			t.Errorf("listed %s with user_unknown %v", s.GetUser(), s.GetUserUnknown())
		}
	}
	lift, err := e.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "dmeo"})
	if err != nil || lift.GetUserUnknown() {
		t.Fatalf("lift of dmeo: %v %v; want it lifted, nothing said of the name", lift, err)
	}
}

// The standby refuses a lift as it does a suspension, and says what to do
// on the active manager: a lift was answered "suspend the subscriber on
// the active manager".
func TestStandbyRefusesLiftNamingIt(t *testing.T) {
	ctx := context.Background()
	open, _ := sharedRedis(t)
	a, b := activeAndStandby(t, open, testTitles, nil)
	if _, err := a.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "demo", DurationS: 60}); err != nil {
		t.Fatal(err)
	}
	_, liftErr := b.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "demo"})
	_, suspendErr := b.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "kid", DurationS: 60})
	for what, c := range map[string]struct {
		err  error
		want string
	}{
		"lift":    {liftErr, "lift the suspension on the active manager"},
		"suspend": {suspendErr, "suspend the subscriber on the active manager"},
	} {
		if status.Code(c.err) != codes.FailedPrecondition || !strings.Contains(status.Convert(c.err).Message(), c.want) {
			t.Errorf("the standby's %s: %v; want FAILED_PRECONDITION saying %q", what, c.err, c.want)
		}
	}
}
