package acm

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	pb "vodcluster/proto/vodcluster/v1"
)

// A change whose end state already holds answers NOT_FOUND with the
// ErrorInfo reason ALREADY_DONE (pb.IsAlreadyDone), which vodctl takes for
// nothing to do (exit status 0, as a pin twice): unpin of a title not
// pinned there, a lift of a subscriber not suspended, the end of the
// sessions of a subscriber with none, the eviction of a title in the
// catalog the node does not hold (it was plain NOT_FOUND: evict twice
// exited 1). An unknown node, title or
// subscriber is NOT_FOUND without it, and says which: unpin from a node
// not registered said "not pinned to node n9", as if the pin were merely
// missing; a lift and an end for a name the users file does not hold name
// the users file.
func TestAlreadyDoneAnswers(t *testing.T) {
	var f *failingBOSS
	e := newManagerWith(t, t.TempDir(), unhinted(), func(m *Manager) {
		fastStorage(m)
		f = &failingBOSS{BOSS: m.BOSS}
		m.BOSS = f
	})
	e.startSimNode("n1", storageTitles, simOpts{held: []*pb.StoredTitle{stored("t1")}})
	ctx := context.Background()
	lift := func(user string) error {
		_, err := e.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: user})
		return err
	}
	evict := func(title string) error {
		_, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: title, NodeId: "n1"})
		return err
	}
	end := func(user string) error {
		_, err := e.admin.EndSessions(ctx, &pb.EndSessionsRequest{User: user})
		return err
	}
	for name, tc := range map[string]struct {
		err  error
		done bool
		msg  string
	}{
		"unpin not pinned":    {unpinErr(e, "t1", "n1"), true, `title "t1" is not pinned to node n1`},
		"unpin cluster":       {unpinErr(e, "t1", ""), true, `title "t1" is not pinned to the cluster`},
		"unpin unknown node":  {unpinErr(e, "t1", "n9"), false, `node "n9" is not registered`},
		"unpin unknown title": {unpinErr(e, "zz", "n1"), false, `title "zz" is not in the catalog`},
		"lift not suspended":  {lift("demo"), true, `subscriber "demo" is not suspended`},
		"lift unknown user":   {lift("dmeo"), false, `"dmeo" is not suspended (the users file has no such subscriber)`},
		"end no live session": {end("demo"), true, `subscriber "demo" has no live session`},
		"end unknown user":    {end("dmeo"), false, `"dmeo" has no live session (the users file has no such subscriber)`},
		"evict not held":      {evict("t2"), true, `node "n1" does not hold title "t2"`},
		"evict unknown title": {evict("zz"), false, `node "n1" does not hold title "zz", which is not in the catalog`},
	} {
		if grpcCode(tc.err) != codes.NotFound || pb.IsAlreadyDone(tc.err) != tc.done || !strings.Contains(tc.err.Error(), tc.msg) {
			t.Errorf("%s: %v (already done %v), want NOT_FOUND %q, already done %v", name, tc.err, pb.IsAlreadyDone(tc.err), tc.msg, tc.done)
		}
	}
	// A users file that does not answer says nothing of the name: not
	// "nothing to do" (a script would take a typo for success).
	f.entitledDown.Store(true)
	for name, err := range map[string]error{"lift": lift("demo"), "end": end("demo")} {
		if grpcCode(err) != codes.NotFound || pb.IsAlreadyDone(err) || !strings.Contains(err.Error(), "the users file could not be checked for the name") {
			t.Errorf("%s with the users file down: %v (already done %v), want NOT_FOUND saying the name was not checked", name, err, pb.IsAlreadyDone(err))
		}
	}
	f.entitledDown.Store(false)
	for user, unknown := range map[string]bool{"demo": false, "dmeo": true} {
		r, err := e.admin.ClearLoginFailures(ctx, &pb.ClearLoginFailuresRequest{User: user})
		if err != nil || r.UserUnknown != unknown {
			t.Errorf("unlock %s: %v %v, want user_unknown %v", user, r, err, unknown)
		}
	}
}

// unpinErr is the error of e's Unpin of title from node ("" the cluster).
func unpinErr(e *env, title, node string) error {
	_, err := e.admin.Unpin(context.Background(), &pb.PlacementRequest{TitleId: title, NodeId: node})
	return err
}
