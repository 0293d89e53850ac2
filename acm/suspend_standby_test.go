package acm

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/store"
	"vodcluster/lsm"
	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// TestStandbyKeepsTheActiveManagersSuspensions: two managers share one
// Redis. The operator suspends a subscriber on the active manager after
// the standby started; the standby lists it, and once a node registers
// with the standby (the front door's address moved to it, before it
// holds the planner lock) its front door refuses the subscriber (403)
// as the active one did. The standby used to list and apply only the
// suspensions of its own start. A lift on the active manager reaches the
// standby at the next registration too.
func TestStandbyKeepsTheActiveManagersSuspensions(t *testing.T) {
	open, _ := sharedRedis(t)
	a, b := activeAndStandby(t, open, testTitles, nil)
	ctx := context.Background()
	if _, err := a.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "demo", DurationS: 3600, Reason: "account shared"}); err != nil {
		t.Fatal(err)
	}
	list, err := b.admin.ListSuspensions(ctx, &pb.ListSuspensionsRequest{})
	if err != nil || len(list.GetSuspensions()) != 1 || list.GetSuspensions()[0].GetUser() != "demo" {
		t.Fatalf("the standby's list: %v %v; want demo", list, err)
	}
	a.keepServing() // else the lock would go to b, which a node reports to
	n := b.registerWith("n1")
	if b.m.Leader() {
		t.Fatal("the standby took the lock while the active manager runs")
	}
	if res := b.describe("demo", "demo", "t1"); res.StatusCode != base.StatusForbidden {
		t.Fatalf("DESCRIBE of the suspended subscriber on the standby: %d %s, want 403", res.StatusCode, res.StatusMessage)
	}
	if _, err := a.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "demo"}); err != nil {
		t.Fatal(err)
	}
	n.stop()
	b.registerWith("n1")
	if res := b.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("DESCRIBE after the lift on the active manager: %d %s, want 302", res.StatusCode, res.StatusMessage)
	}
}

// The standby's lists say so (ListSessionsResponse.standby and the same in
// ListNodes, ListFills, ListPlacement and GetPolicy): `vodctl sessions`
// against it printed an empty table with nothing to tell it from a
// cluster without a viewer, `vodctl placement` no copy anywhere, `vodctl
// policy` a storage planner that never planned; so does SetNode's answer
// (NodeInfo.standby: `vodctl node ID` showed a node registered with the
// active manager as not registered, by its stored setting, without a
// word). The active manager's do not. A node filter naming a node registered with the active manager
// only is NOT_FOUND on the standby, which says to ask the active manager.
func TestStandbyListsSaySo(t *testing.T) {
	open, _ := sharedRedis(t)
	a, b := activeAndStandby(t, open, testTitles, nil)
	ctx := context.Background()
	a.registerWith("n1")
	w := int32(lsm.DefaultWeight) // a stored setting, which the standby shows for n1
	if _, err := a.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Weight: &w}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"ListSessions", func() error {
			_, err := b.admin.ListSessions(ctx, &pb.ListSessionsRequest{NodeId: "n1"})
			return err
		}},
		{"ListPlacement", func() error {
			_, err := b.admin.ListPlacement(ctx, &pb.ListPlacementRequest{NodeId: "n1"})
			return err
		}},
	} {
		if err := c.call(); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "ask the active manager") {
			t.Errorf("standby: %s of node n1 (registered with the active manager): %v; want NOT_FOUND saying to ask the active manager", c.name, err)
		}
	}
	// A node registered with the active manager only, without a stored
	// setting (most nodes): the standby's NOT_FOUND says to ask the active
	// manager (it read as a node out of the cluster), the active's not.
	a.registerWith("n2")
	if _, err := b.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n2"}); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "ask the active manager") {
		t.Errorf("standby: SetNode showing n2 (registered with the active manager, no stored setting): %v; want NOT_FOUND saying to ask the active manager", err)
	}
	if _, err := a.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n9"}); status.Code(err) != codes.NotFound || strings.Contains(err.Error(), "active manager") {
		t.Errorf("active: SetNode showing an unknown node: %v; want NOT_FOUND without a word of a standby", err)
	}
	if _, err := a.admin.ListPlacement(ctx, &pb.ListPlacementRequest{NodeId: "n9"}); status.Code(err) != codes.NotFound || strings.Contains(err.Error(), "active manager") {
		t.Errorf("active: ListPlacement of an unknown node: %v; want NOT_FOUND without a word of a standby", err)
	}
	for _, c := range []struct {
		name    string
		e       *env
		standby bool
	}{{"active", a, false}, {"standby", b, true}} {
		admin := c.e.admin
		for _, call := range []struct {
			rpc string
			get func() (interface{ GetStandby() bool }, error)
		}{
			{"ListSessions", func() (interface{ GetStandby() bool }, error) {
				return admin.ListSessions(ctx, &pb.ListSessionsRequest{})
			}},
			{"ListNodes", func() (interface{ GetStandby() bool }, error) { return admin.ListNodes(ctx, &pb.ListNodesRequest{}) }},
			{"ListFills", func() (interface{ GetStandby() bool }, error) { return admin.ListFills(ctx, &pb.ListFillsRequest{}) }},
			{"ListPlacement", func() (interface{ GetStandby() bool }, error) {
				return admin.ListPlacement(ctx, &pb.ListPlacementRequest{})
			}},
			{"GetPolicy", func() (interface{ GetStandby() bool }, error) { return admin.GetPolicy(ctx, &pb.GetPolicyRequest{}) }},
			{"SetNode (shown)", func() (interface{ GetStandby() bool }, error) {
				return admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1"})
			}},
		} {
			res, err := call.get()
			if err != nil || res.GetStandby() != c.standby {
				t.Errorf("%s: %s standby %v (%v), want %v", c.name, call.rpc, err == nil && res.GetStandby(), err, c.standby)
			}
		}
	}
}

// pairWithLogs starts an active manager a and a standby b on the shared
// store open opens (activeAndStandby), each logging into its own buffer
// (logs[0] a's, logs[1] b's), and registers node n1 with the standby (the
// front door's address moved to it, before it holds the planner lock).
func pairWithLogs(t *testing.T, open func() *store.Redis) (a, b *env, logs *[2]logtest.Buffer) {
	t.Helper()
	logs = new([2]logtest.Buffer)
	started := 0
	a, b = activeAndStandby(t, open, testTitles, func(m *Manager) {
		m.Logger = slog.New(slog.NewTextHandler(&logs[started], nil))
		started++
	})
	a.keepServing() // else the lock would go to b, which a node reports to
	b.registerWith("n1")
	return a, b, logs
}

// suspended returns a check of whether e's manager holds user suspended
// at the time of the call (for waitFor).
func (e *env) suspended(user string) func() bool {
	return func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.suspendedLocked(user, e.m.now())
	}
}

// TestStandbyRereadsSuspensions: a subscriber suspended on the active
// manager after a node registered with the standby (the front door's
// address moved to it, before it takes the planner lock) is refused by
// the standby's front door without another registration, and a lift
// reaches it alike: the standby re-reads the stored suspensions at each
// try at the lock. It applied only those of the node's registration. When
// Redis stops answering, the standby says so and keeps refusing the
// subscriber it last read suspended; the active manager, which loses the
// lock then, says so without calling itself a standby.
func TestStandbyRereadsSuspensions(t *testing.T) {
	open, srv := sharedRedis(t)
	a, b, logs := pairWithLogs(t, open)
	log := &logs[1]
	ctx := context.Background()
	suspended := b.suspended("demo")
	if _, err := a.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "demo", DurationS: 3600}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the standby to apply the suspension made on the active manager", suspended)
	if res := b.describe("demo", "demo", "t1"); res.StatusCode != base.StatusForbidden {
		t.Fatalf("DESCRIBE of the subscriber suspended on the active manager, on the standby: %d %s, want 403", res.StatusCode, res.StatusMessage)
	}
	if _, err := a.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "demo"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the standby to apply the lift made on the active manager", func() bool { return !suspended() })
	if res := b.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("DESCRIBE after the lift on the active manager, on the standby: %d %s, want 302", res.StatusCode, res.StatusMessage)
	}
	if b.m.Leader() {
		t.Fatal("the standby took the lock while the active manager runs")
	}
	if _, err := a.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "demo", DurationS: 3600}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the standby to apply the second suspension", suspended)
	srv.Pause(t)
	const said = "standby: suspensions not re-read from the store"
	waitFor(t, 10*time.Second, "the standby to log that the store does not answer", func() bool { return strings.Contains(log.String(), said) })
	// The active manager lost the planner lock in the same stall: no
	// standby, its line said "standby:" all the same.
	const lost = "planner lock not held: suspensions not re-read from the store"
	waitFor(t, 10*time.Second, "the manager that lost the lock to log that the store does not answer", func() bool { return strings.Contains(logs[0].String(), lost) })
	if strings.Contains(logs[0].String(), "standby:") {
		t.Fatalf("the manager that lost the planner lock in the stall logged as a standby:\n%s", logs[0].String())
	}
	if !suspended() {
		t.Fatal("the standby dropped the suspension it read when the store stopped answering")
	}
	if res := b.describe("demo", "demo", "t1"); res.StatusCode != base.StatusForbidden {
		t.Fatalf("DESCRIBE of the suspended subscriber on the standby, Redis stalled: %d %s, want 403", res.StatusCode, res.StatusMessage)
	}
}

// TestStandbyKeepsSuspensionsOverMalformedEntry: the stored suspensions
// are overwritten with something that does not decode (a hand edit in
// redis-cli). The standby, which re-reads them at each try at the
// planner lock, used to log "stored suspensions malformed: dropped" at
// error at every try (every third of leader_ttl, without end) and drop
// every suspension, its front door admitting the suspended subscriber.
// It now keeps those it read last and logs it once; the next suspension
// the active manager writes is read again.
func TestStandbyKeepsSuspensionsOverMalformedEntry(t *testing.T) {
	open, _ := sharedRedis(t)
	a, b, logs := pairWithLogs(t, open)
	log := &logs[1]
	ctx := context.Background()
	suspended := b.suspended
	if _, err := a.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "demo", DurationS: 3600}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the standby to apply the suspension made on the active manager", suspended("demo"))
	if err := b.m.st.PutState(ctx, stateSuspensions, []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	const said = "standby: stored suspensions malformed"
	waitFor(t, 10*time.Second, "the standby to log the malformed entry", func() bool {
		return strings.Contains(log.String(), said) || strings.Contains(log.String(), "stored suspensions malformed: dropped")
	})
	if !suspended("demo")() {
		t.Fatal("the standby dropped the suspension it read when the stored entry became malformed")
	}
	if res := b.describe("demo", "demo", "t1"); res.StatusCode != base.StatusForbidden {
		t.Fatalf("DESCRIBE of the suspended subscriber on the standby, stored entry malformed: %d %s, want 403", res.StatusCode, res.StatusMessage)
	}
	// The standby reads again at each try (a log line each, before); the
	// active manager's next write ends it.
	lines := func() int { return strings.Count(log.String(), "suspensions malformed") }
	if _, err := a.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "other", DurationS: 3600}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the standby to read the suspensions the active manager wrote again", suspended("other"))
	if n := lines(); n != 1 {
		t.Fatalf("the standby logged the malformed entry %d times, want once:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "standby: suspensions re-read from the store") {
		t.Fatalf("the standby did not log that it read the suspensions again:\n%s", log.String())
	}
}

// TestStandbyListSuspensionsRedisStalled: vodctl suspensions against the
// standby while Redis does not answer. The standby read the store for up
// to 10 s, vodctl's own default --timeout, so the operator got
// "DeadlineExceeded ... no answer within --timeout 10s" instead of the
// answer saying the store does not answer. The read is now bounded well
// under it (adminStoreWait): UNAVAILABLE "suspensions not read".
func TestStandbyListSuspensionsRedisStalled(t *testing.T) {
	open, srv := sharedRedis(t)
	_, b := activeAndStandby(t, open, testTitles, nil)
	srv.Pause(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // vodctl's default --timeout
	defer cancel()
	_, err := b.admin.ListSuspensions(ctx, &pb.ListSuspensionsRequest{})
	if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "suspensions not read") {
		t.Fatalf("ListSuspensions on the standby, Redis stalled, within vodctl's 10s: %v; want UNAVAILABLE 'suspensions not read'", err)
	}
}
