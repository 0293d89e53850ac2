package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// An operator's eviction refused for a title in use names what uses it:
// a viewer admitted and on its way to the node ("reserved", not
// "playing"), a session playing it, or a fill of it. It said "playing or
// filling" for each, so an operator who saw no session playing the title
// (vodctl sessions: admitted) and no fill (vodctl fills: none) was told
// of neither.
func TestEvictRefusalNamesWhatUsesTheTitle(t *testing.T) {
	e := newManager(t, "", nil)
	n := e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
		{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 40, Filling: true},
	}})
	ctx := context.Background()
	evict := func(title string) error {
		t.Helper()
		_, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: title, NodeId: "n1"})
		if status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("evict %s: %v, want FailedPrecondition", title, err)
		}
		return err
	}
	a := e.admitOne("t1")
	if err := evict("t1"); !strings.Contains(err.Error(), "admitted") || strings.Contains(err.Error(), "playing") || strings.Contains(err.Error(), "filling") {
		t.Errorf("evict of a title a viewer is admitted for: %v, want it to name the admitted viewer only", err)
	}
	if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	if err := evict("t1"); !strings.Contains(err.Error(), "1 session playing") || strings.Contains(err.Error(), "filling") {
		t.Errorf("evict of a title playing: %v, want it to name the session playing", err)
	}
	if err := evict("t2"); !strings.Contains(err.Error(), "filling") || strings.Contains(err.Error(), "playing") {
		t.Errorf("evict of a title filling: %v, want it to name the fill", err)
	}
}

// An operator's eviction refused for a title in use counts the sessions
// the node's report says play it beyond those this manager knows there,
// and says whose they may be: another manager's on a store two managers
// share; on a manager of its own, which alone admits to its nodes,
// sessions ending (the node's report came before their ENDED) or ended
// by this manager while the node was cut off. It named this manager's
// sessions alone ("1 session playing" on a node playing three), then
// said "another manager's" on a manager of its own too.
func TestEvictRefusalCountsTheSessionsOnlyTheNodeReports(t *testing.T) {
	for _, shared := range []bool{false, true} {
		name, others := "own store", "ending, or ended by this manager while the node was cut off"
		if shared {
			name, others = "shared store", "another manager's, or ending: the node reported before their ENDED"
		}
		t.Run(name, func(t *testing.T) {
			var configure func(*Manager)
			if shared {
				open, _ := sharedRedis(t)
				configure = onShared(open(), &countPlanner{}, time.Minute)
			}
			e := newManager(t, "", configure)
			waitFor(t, 5*time.Second, "the planner lock", e.m.Leader)
			n := e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{
				{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000, Sessions: 3}, // one this manager's, once started
				{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 1_500_000, Sessions: 2},
			}})
			evict := func(title string) string {
				t.Helper()
				_, err := e.admin.Evict(context.Background(), &pb.PlacementRequest{TitleId: title, NodeId: "n1"})
				if status.Code(err) != codes.FailedPrecondition {
					t.Fatalf("evict %s: %v, want FailedPrecondition", title, err)
				}
				return err.Error()
			}
			if msg, want := evict("t2"), "has 2 sessions playing by the node's report ("+others+")"; !strings.Contains(msg, want) {
				t.Errorf("evict of a title only sessions this manager does not know play: %q, want %q", msg, want)
			}
			a := e.admitOne("t1")
			if msg, want := evict("t1"), "has 2 sessions playing by the node's report ("+others+")"; !strings.Contains(msg, want) || !strings.Contains(msg, "1 viewer admitted") {
				t.Errorf("evict of a title sessions this manager does not know play, this manager's viewer on its way: %q, want %q and the viewer", msg, want)
			}
			if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
				t.Fatal(err)
			}
			if msg, want := evict("t1"), "has 3 sessions playing (1 this manager's: vodctl sessions; 2 more by the node's report: "+others+")"; !strings.Contains(msg, want) {
				t.Errorf("evict of a title this manager's session and others play: %q, want %q", msg, want)
			}
		})
	}
}

// An operator's eviction refused for a session its node lists idle (an
// HTTP viewer that has asked nothing past the node's session timeout: a
// download finished minutes ago) says so, that the node keeps it until
// its pause_timeout, and how to end it now. It said "1 session playing
// or paused" of a download the operator knew had ended.
func TestEvictRefusalNamesTheIdleSessions(t *testing.T) {
	e := newManager(t, "", nil)
	n := e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}})
	a := e.admitOne("t1")
	if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	n.setIdle(a, 90)
	n.heartbeat()
	waitFor(t, 5*time.Second, "the session listed idle", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		_, ok := e.m.nodes["n1"].idle[a]
		return ok
	})
	_, err := e.admin.Evict(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	if want := "1 of them idle, kept until the node's pause_timeout for a viewer coming back: vodctl sessions end " + a + " ends them now"; status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), want) {
		t.Fatalf("evict of a title an idle session holds: %v, want FailedPrecondition saying %q", err, want)
	}
}
