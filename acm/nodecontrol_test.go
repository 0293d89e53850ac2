package acm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"google.golang.org/grpc/codes"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// admitOne admits title for demo over RTSP and returns the session id.
func (e *env) admitOne(title string) string {
	e.t.Helper()
	res := e.describe("demo", "demo", title)
	if res.StatusCode != base.StatusFound {
		e.t.Fatalf("describe %s: %d", title, res.StatusCode)
	}
	c, err := e.signer.Parse(tokenFromLocation(res.Header["Location"][0]))
	if err != nil {
		e.t.Fatal(err)
	}
	return c.Session
}

func tokenFromLocation(loc string) string {
	_, rest, _ := cutAfter(loc, "/s/")
	tok, _, _ := cutAfter(rest, "/")
	return tok
}

func cutAfter(s, sep string) (before, after string, ok bool) {
	for i := 0; i+len(sep) <= len(s); i++ {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}

func (e *env) session(id string) *pb.SessionInfo {
	for _, s := range e.sessions() {
		if s.SessionId == id {
			return s
		}
	}
	return nil
}

func TestSessionEventsStartAndEndOnce(t *testing.T) {
	e := newManager(t, "", nil)
	n := e.startNode("n1", nodeOpts{})
	a, b := e.admitOne("t1"), e.admitOne("t2")
	if got := e.reserved("n1"); got != 2*titleBps {
		t.Fatalf("reserved %d", got)
	}
	if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	if s := e.session(a); s.State != store.StatePlaying || s.StartedUnixMs == 0 {
		t.Fatalf("after STARTED: %+v", s)
	}
	if err := n.event(a, pb.SessionEvent_KIND_ENDED); err != nil {
		t.Fatal(err)
	}
	if got := e.reserved("n1"); got != titleBps {
		t.Fatalf("after ENDED reserved %d", got)
	}
	if err := n.event(a, pb.SessionEvent_KIND_ENDED); grpcCode(err) != codes.NotFound {
		t.Fatalf("second ENDED: %v", err)
	}
	if got := e.reserved("n1"); got != titleBps || e.nodeInfo("n1").Sessions != 1 {
		t.Fatalf("second ENDED released again: %d", got)
	}
	if _, err := e.m.st.Session(context.Background(), a); err == nil {
		t.Fatal("ended session still stored")
	}
	// A lost STARTED is repaired by the heartbeat listing the session.
	n.setSessions(b)
	waitFor(t, 5*time.Second, "heartbeat to mark b playing", func() bool { return e.session(b).State == store.StatePlaying })
	// Bad events.
	for _, ev := range []*pb.SessionEvent{
		{NodeId: "n1", Kind: pb.SessionEvent_KIND_ENDED},
		{NodeId: "n1", SessionId: b},
		{NodeId: "n2", SessionId: b, Kind: pb.SessionEvent_KIND_ENDED},
		{SessionId: b, Kind: pb.SessionEvent_KIND_ENDED}, // no node: it could end a session anywhere
		{NodeId: "n1", SessionId: "0123", Kind: pb.SessionEvent_KIND_STARTED},
	} {
		if _, err := e.nc.ReportSession(context.Background(), ev); err == nil {
			t.Errorf("%v accepted", ev)
		}
	}
	if e.reserved("n1") != titleBps {
		t.Fatal("bad events changed reservations")
	}
}

func TestNoShowReleased(t *testing.T) {
	// The session that shows must start within TokenTTL+NoShowGrace of
	// its admission, after a second admission: 2 s leaves a loaded
	// machine room (the no-show's release is awaited, not slept for).
	e := newManager(t, "", func(m *Manager) { m.TokenTTL = time.Second; m.NoShowGrace = time.Second; withMetrics(m) })
	n := e.startNode("noshow-n1", nodeOpts{})
	shows, noShow := e.admitOne("t1"), e.admitOne("t2")
	if err := n.event(shows, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "no-show release", func() bool { return e.session(noShow) == nil })
	if got := e.reserved("noshow-n1"); got != titleBps {
		t.Fatalf("reserved %d, want the playing session's only", got)
	}
	if e.session(shows) == nil {
		t.Fatal("playing session released as a no-show")
	}
	// The operator sees it: two admitted to the node, one no-show.
	got := nodeSeries(scrape(t, e.m), "noshow-n1")
	for _, want := range []string{`vodcluster_node_admissions_total{node="noshow-n1"} 2`, `vodcluster_node_no_shows_total{node="noshow-n1"} 1`} {
		if !slices.Contains(got, want) {
			t.Fatalf("the node's series %v, want %s", got, want)
		}
	}
}

// A node that misses its heartbeats is dead: its reservations are released
// at once and it gets no new session; its sessions stay (orphaned) for
// RestoreGrace in case it only lost its link, then end.
func TestNodeDeathOrphansThenEndsSessions(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.RestoreGrace = 500 * time.Millisecond })
	n1 := e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001", egress: titleBps})
	e.startNode("n2", nodeOpts{rtsp: "127.0.0.1:7002", egress: titleBps})
	a, b := e.admitOne("t1"), e.admitOne("t2")
	onN1 := a
	if e.session(b).NodeId == "n1" {
		onN1 = b
	}
	if err := n1.event(onN1, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	n1.stop()
	waitFor(t, 5*time.Second, "n1 to die", func() bool { return !e.nodeInfo("n1").Alive })
	if got := e.reserved("n1"); got != 0 {
		t.Fatalf("dead node keeps %d bit/s", got)
	}
	// New requests go to the live node only: it is full, so 453.
	if res := e.describe("demo", "demo", "t3"); res.StatusCode != base.StatusNotEnoughBandwidth {
		t.Fatalf("with n1 dead and n2 full: %d", res.StatusCode)
	}
	waitFor(t, 5*time.Second, "n1's session to end after the grace", func() bool { return len(e.sessions()) == 1 })
	left := e.sessions()[0]
	if left.NodeId != "n2" || left.SessionId == onN1 {
		t.Fatalf("left %+v", left)
	}
	// The store's delete follows the table's (written after the lock).
	waitFor(t, 5*time.Second, "the store to hold only n2's session", func() bool {
		ss, _, err := e.m.st.Sessions(context.Background())
		return err == nil && len(ss) == 1 && ss[0].ID == left.SessionId
	})
}

// A node that lost its link for longer than the missed heartbeats and
// comes back gets the reservations of the sessions it still plays; those
// it no longer plays end at its first report.
func TestNodeBackAfterDeathKeepsItsSessions(t *testing.T) {
	e := newManager(t, "", nil) // RestoreGrace 30 s: the node is back well within it
	n := e.startNode("n1", nodeOpts{})
	a, b, c := e.admitOne("t1"), e.admitOne("t2"), e.admitOne("t3")
	for _, id := range []string{a, b} {
		if err := n.event(id, pb.SessionEvent_KIND_STARTED); err != nil {
			t.Fatal(err)
		}
	}
	n.stop()
	waitFor(t, 5*time.Second, "n1 to die", func() bool { return !e.nodeInfo("n1").Alive })
	if got, ss := e.reserved("n1"), len(e.sessions()); got != 0 || ss != 3 {
		t.Fatalf("dead node: reserved %d, %d sessions", got, ss)
	}
	back := e.registerOnly("n1", a)
	if got := e.reserved("n1"); got != 3*titleBps {
		t.Fatalf("reserved after register %d, want %d", got, 3*titleBps)
	}
	back.heartbeat()
	t.Cleanup(back.stop)
	waitFor(t, 5*time.Second, "b to end", func() bool { return e.session(b) == nil })
	if e.session(a) == nil || e.session(c) == nil || e.reserved("n1") != 2*titleBps {
		t.Fatalf("sessions %v, reserved %d", e.sessions(), e.reserved("n1"))
	}
	waitFor(t, 5*time.Second, "the store to hold a and c", func() bool {
		ss, _, err := e.m.st.Sessions(context.Background())
		return err == nil && len(ss) == 2
	})
}

func TestRestartKeepsCatalogAndSessions(t *testing.T) {
	dir := t.TempDir()
	e := newManager(t, dir, nil)
	n := e.startNode("n1", nodeOpts{})
	a, b, c := e.admitOne("t1"), e.admitOne("t2"), e.admitOne("t3")
	for _, id := range []string{a, b} {
		if err := n.event(id, pb.SessionEvent_KIND_STARTED); err != nil {
			t.Fatal(err)
		}
	}
	n.stop()
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}

	// The origin is down at the restart: the catalog comes from the store.
	e2 := newManager(t, dir, func(m *Manager) { m.OriginAddr = "127.0.0.1:1" })
	titles, err := e2.admin.ListTitles(context.Background(), &pb.ListTitlesRequest{})
	if err != nil || len(titles.Titles) != len(testTitles) {
		t.Fatalf("catalog after restart: %v %v", titles, err)
	}
	if got := len(e2.sessions()); got != 3 {
		t.Fatalf("%d sessions after restart, want 3", got)
	}
	// Its node not registered again, each session is an orphan (no
	// reservation, it ends after restore_grace) and listed so, as one of
	// a dead node; it is listed by its state again once the node is back.
	for _, id := range []string{a, b, c} {
		if s := e2.session(id); s.State != listedOrphaned || s.User != "demo" || s.NodeId != "n1" {
			t.Fatalf("restored %+v, want state %q", s, listedOrphaned)
		}
	}
	// The node comes back: reservations are rebuilt; its first heartbeat
	// lists a only, so b (playing, gone from the node) ends, while c
	// (admitted, its client may still arrive) stays.
	n2 := e2.registerOnly("n1", a)
	if got := e2.reserved("n1"); got != 3*titleBps {
		t.Fatalf("reserved after register %d, want %d", got, 3*titleBps)
	}
	if s := e2.session(a); s.State != store.StatePlaying {
		t.Fatalf("after register %+v, want %q", s, store.StatePlaying)
	}
	if s := e2.session(c); s.State != store.StateAdmitted {
		t.Fatalf("after register %+v, want %q", s, store.StateAdmitted)
	}
	n2.heartbeat()
	t.Cleanup(n2.stop)
	waitFor(t, 5*time.Second, "b to end", func() bool { return e2.session(b) == nil })
	if e2.session(a) == nil || e2.session(c) == nil {
		t.Fatalf("sessions %v", e2.sessions())
	}
	if got := e2.reserved("n1"); got != 2*titleBps {
		t.Fatalf("reserved %d, want %d", got, 2*titleBps)
	}
	if err := n2.event(a, pb.SessionEvent_KIND_ENDED); err != nil {
		t.Fatal(err)
	}
	if got := e2.reserved("n1"); got != titleBps {
		t.Fatalf("after ENDED %d", got)
	}
}

func TestRestoredSessionEndsWhenNodeNeverReturns(t *testing.T) {
	dir := t.TempDir()
	e := newManager(t, dir, nil)
	n := e.startNode("n1", nodeOpts{})
	e.admitOne("t1")
	n.stop()
	e.m.Close()
	// The restored session is looked at right after the start, before
	// the grace is over: 1 s leaves a loaded machine room for the first
	// Admin call (its connection is dialled then).
	e2 := newManager(t, dir, func(m *Manager) { m.RestoreGrace = time.Second })
	if len(e2.sessions()) != 1 {
		t.Fatal("session not restored")
	}
	waitFor(t, 5*time.Second, "the orphan to end", func() bool { return len(e2.sessions()) == 0 })
	// The store's delete follows the table's (written after the lock).
	waitFor(t, 5*time.Second, "the orphan gone from the store", func() bool {
		ss, _, err := e2.m.st.Sessions(context.Background())
		return err == nil && len(ss) == 0
	})
}

func TestRegisterAndHeartbeatValidation(t *testing.T) {
	e := newManager(t, "", nil)
	ctx := context.Background()
	for name, r := range map[string]*pb.RegisterRequest{
		"no id":             regReq("", "127.0.0.1:1", "", titleBps),
		"bad id":            regReq("a b", "127.0.0.1:1", "", titleBps),
		"no rtsp host":      regReq("n1", ":8554", "", titleBps),
		"any address":       regReq("n1", "0.0.0.0:8554", "", titleBps),
		"bad http":          regReq("n1", "127.0.0.1:1", "nohost", titleBps),
		"rtsps any address": {NodeId: "n1", RtspAddr: "127.0.0.1:1", RtspsAddr: "[::]:8323", Capacity: &pb.NodeCapacity{EgressBps: 1}},
		"bad rtsps":         {NodeId: "n1", RtspAddr: "127.0.0.1:1", RtspsAddr: "nohost", Capacity: &pb.NodeCapacity{EgressBps: 1}},
		"no capacity":       regReq("n1", "127.0.0.1:1", "", 0),
		"nil capacity":      {NodeId: "n1", RtspAddr: "127.0.0.1:1"},
		"neg weight":        {NodeId: "n1", RtspAddr: "127.0.0.1:1", Capacity: &pb.NodeCapacity{EgressBps: 1}, Weight: -1},
		"untitled item":     {NodeId: "n1", RtspAddr: "127.0.0.1:1", Capacity: &pb.NodeCapacity{EgressBps: 1}, Titles: []*pb.StoredTitle{{}}},
	} {
		if _, err := e.nc.Register(ctx, r); grpcCode(err) != codes.InvalidArgument {
			t.Errorf("%s: %v", name, err)
		}
	}
	st, err := e.nc.Heartbeat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st.Send(&pb.LoadReport{NodeId: "ghost"})
	if _, err := st.Recv(); grpcCode(err) != codes.FailedPrecondition {
		t.Fatalf("heartbeat before register: %v", err)
	}
	n := e.startNode("n1", nodeOpts{})
	n.stop()
	st, _ = e.nc.Heartbeat(ctx)
	st.Send(&pb.LoadReport{NodeId: "n1"})
	st.Send(&pb.LoadReport{NodeId: "n2"})
	if _, err := st.Recv(); grpcCode(err) != codes.InvalidArgument {
		t.Fatalf("report for another node: %v", err)
	}
}

func TestEvictionBeforeFill(t *testing.T) {
	e := newManager(t, "", nil)
	old := time.Now().Add(-time.Hour).UnixMilli()
	n := e.startNode("n1", nodeOpts{
		diskFree: 500_000, // t3 needs 1.5 MB
		titles: []*pb.StoredTitle{
			{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000, LastAccessUnixMs: old},              // idle, oldest
			{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 1_500_000, LastAccessUnixMs: old, Sessions: 1}, // playing
			{TitleId: "adult-1", SizeBytes: 1_500_000, StoredBytes: 1_500_000, LastAccessUnixMs: old + 1000},
		},
	})
	n.registrationProtect(t)
	e.admitOne("t3")
	select {
	case cmd := <-n.cmds:
		if cmd.GetEvict().GetTitleId() != "t1" {
			t.Fatalf("command %v, want evict t1", cmd)
		}
	case <-time.After(waitForMin):
		t.Fatal("no eviction command")
	}
	select {
	case cmd := <-n.cmds:
		t.Fatalf("more than needed: %v", cmd)
	default:
	}
	// A title the node holds is no fill: nothing is evicted.
	e.admitOne("adult-1")
	select {
	case cmd := <-n.cmds:
		t.Fatalf("eviction for a held title: %v", cmd)
	case <-time.After(200 * time.Millisecond):
	}
}

// A node whose reports stopped long enough to be declared dead, and that
// reports again on a stream without registering (its link only stalled),
// gets its sessions' reservations back; while it was dead its subscriber
// could start a new session within the per-user cap.
func TestNodeStalledThenReportsAgain(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.MaxSessionsPerUser = 2 })
	n1 := e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001"})
	a, b := e.admitOne("t1"), e.admitOne("t2")
	for _, id := range []string{a, b} {
		if err := n1.event(id, pb.SessionEvent_KIND_STARTED); err != nil {
			t.Fatal(err)
		}
	}
	if res := e.describe("demo", "demo", "t3"); res.StatusCode != base.StatusForbidden {
		t.Fatalf("third session within a cap of 2: %d", res.StatusCode)
	}
	n1.stop()
	waitFor(t, 5*time.Second, "n1 to die", func() bool { return !e.nodeInfo("n1").Alive })
	e.startNode("n2", nodeOpts{rtsp: "127.0.0.1:7002"})
	c := e.admitOne("t3") // the orphans do not count against the cap
	if e.session(c).NodeId != "n2" {
		t.Fatalf("new session on %s", e.session(c).NodeId)
	}
	n1.setSessions(a)
	n1.heartbeat() // no Register
	waitFor(t, 5*time.Second, "b, not on n1 any more, to end", func() bool { return e.session(b) == nil })
	if !e.nodeInfo("n1").Alive || e.reserved("n1") != titleBps || e.session(a) == nil {
		t.Fatalf("n1 alive %v, reserved %d, a %v", e.nodeInfo("n1").Alive, e.reserved("n1"), e.session(a))
	}
	// a counts again: the subscriber is at its cap.
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusForbidden {
		t.Fatalf("with a back and c playing, a third session: %d", res.StatusCode)
	}
}

// A second process registering with the id of a live node at another
// address is refused (ALREADY_EXISTS) and changes nothing: the live
// node keeps its registration and its sessions. The same address (the
// node restarted) is accepted at once; another address once the old one
// missed its heartbeats (the node moved).
func TestDuplicateNodeIDRefused(t *testing.T) {
	e := newManager(t, "", nil)
	n1 := e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001"})
	sid := e.admitOne("t1")
	reg := func(rtsp string) error {
		_, err := e.nc.Register(context.Background(), &pb.RegisterRequest{NodeId: "n1", RtspAddr: rtsp,
			Capacity: &pb.NodeCapacity{EgressBps: 10 * titleBps, DiskBytes: 1 << 40}})
		return err
	}
	if err := reg("127.0.0.1:7009"); grpcCode(err) != codes.AlreadyExists || !strings.Contains(err.Error(), "127.0.0.1:7001") {
		t.Fatalf("a second process with a live node's id: %v, want ALREADY_EXISTS naming the live node", err)
	}
	if info := e.nodeInfo("n1"); info.RtspAddr != "127.0.0.1:7001" || e.session(sid) == nil {
		t.Fatalf("the refused registration changed the live node: %+v, session %v", info, e.session(sid))
	}
	if err := reg("127.0.0.1:7001"); err != nil {
		t.Fatalf("the node re-registering from its own address: %v", err)
	}
	n1.stop()
	waitFor(t, 5*time.Second, "n1 to die", func() bool { return !e.nodeInfo("n1").Alive })
	if err := reg("127.0.0.1:7009"); err != nil {
		t.Fatalf("the id at a new address once the old one is dead: %v", err)
	}
}

// A node that ends its heartbeat stream cleanly (it shuts down) is out of
// service at once, not after its missed heartbeats (an hour here): the
// next viewer goes to the other node, and its sessions are orphaned.
func TestNodeLeavingIsOutOfServiceAtOnce(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.Scheduler.HeartbeatInterval = time.Hour })
	n1 := e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001"})
	sid := e.admitOne("t1")
	e.startNode("n2", nodeOpts{rtsp: "127.0.0.1:7002"})
	if e.session(sid).NodeId != "n1" {
		t.Fatalf("first session on %s", e.session(sid).NodeId)
	}
	n1.leave()
	waitFor(t, 5*time.Second, "n1 out of service", func() bool { return !e.nodeInfo("n1").Alive })
	if got := e.reserved("n1"); got != 0 {
		t.Fatalf("a node that left keeps %d bit/s reserved", got)
	}
	for _, title := range []string{"t1", "t2"} {
		if id := e.admitOne(title); e.session(id).NodeId != "n2" {
			t.Fatalf("%s sent to %s after n1 left", title, e.session(id).NodeId)
		}
	}
}

// A playing session whose ENDED event was lost (a node drops events it
// cannot send) is ended when the node's load reports stop listing it: its
// reservation and its subscriber's slot come back. One that keeps being
// listed, or whose STARTED raced a report, stays.
func TestLostEndedReconciledByReports(t *testing.T) {
	e := newManager(t, "", nil)
	n := e.startNode("n1", nodeOpts{})
	a, b := e.admitOne("t1"), e.admitOne("t2")
	for _, s := range []string{a, b} {
		if err := n.event(s, pb.SessionEvent_KIND_STARTED); err != nil {
			t.Fatal(err)
		}
	}
	n.setSessions(a, b)
	at := e.reports("n1")
	waitFor(t, 5*time.Second, "two reports listing both", func() bool { return e.reports("n1") >= at+2 })
	n.setSessions(b) // a ended at the node; its ENDED never arrives
	waitFor(t, 5*time.Second, "the session absent from the reports to end", func() bool { return e.session(a) == nil })
	if s := e.session(b); s == nil || s.State != "playing" {
		t.Fatalf("the session the reports list: %v", s)
	}
	if got := e.reserved("n1"); got != titleBps {
		t.Fatalf("reserved %d bit/s, want one session's %d", got, titleBps)
	}

	// A STARTED that arrives before a report taken before the session
	// started (the node lists c from then on; the report after the
	// STARTED is the stale one): not ended.
	c := e.admitOne("t3")
	n.mu.Lock() // no report is taken meanwhile
	n.sessions, n.stale = []string{b, c}, []string{b}
	if _, err := e.nc.ReportSession(context.Background(), &pb.SessionEvent{NodeId: "n1", SessionId: c, Kind: pb.SessionEvent_KIND_STARTED}); err != nil {
		t.Fatal(err)
	}
	at = e.reports("n1")
	n.mu.Unlock()
	waitFor(t, 5*time.Second, "the stale report and two more", func() bool { return e.reports("n1") >= at+3 })
	if s := e.session(c); s == nil || s.State != "playing" {
		t.Fatalf("a session whose STARTED came before its first listing was ended: %v", s)
	}
}

// A node cut off from the manager for longer than RestoreGrace, still
// playing its sessions when it comes back, is told to end those the
// manager ended meanwhile (their reservations are gone), once its reports
// list them twice; a session the manager never held (another manager's)
// is left alone.
func TestNodeToldToEndSessionsEndedWhileAway(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.RestoreGrace = 300 * time.Millisecond })
	n := e.startNode("n1", nodeOpts{})
	a := e.admitOne("t1")
	if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	n.stop() // the link is cut; the node plays on
	waitFor(t, 10*time.Second, "the session ended: its node did not come back", func() bool { return e.session(a) == nil })
	n.setSessions(a, "someone-elses")
	n.heartbeat() // the node is back, still playing it
	deadline := time.After(waitForMin)
	for {
		select {
		case c := <-n.cmds:
			end := c.GetEndSessions()
			if end == nil {
				continue
			}
			if !slices.Equal(end.GetSessionIds(), []string{a}) || end.GetReason() == "" {
				t.Fatalf("EndSessions %v", end)
			}
			return
		case <-deadline:
			t.Fatal("no EndSessions for the session the manager ended while the node was away")
		}
	}
}

// slowPut is a store whose write of one session takes a while (a Redis
// hiccup, a disk flush).
type slowPut struct {
	store.Store
	slow *atomic.Value // session id whose PutSession is slow
	d    time.Duration
}

func (s slowPut) PutSession(ctx context.Context, x store.Session) error {
	if id, _ := s.slow.Load().(string); id == x.ID {
		time.Sleep(s.d) // the store's latency, not a synchronisation
	}
	return s.Store.PutSession(ctx, x)
}

// Reports that queued behind a slow store write were taken before a
// session started (by the node's clock): they do not count as leaving it
// out, and it is neither ended nor is the node told to end it.
func TestQueuedReportsDoNotEndNewSession(t *testing.T) {
	dir := t.TempDir()
	b, err := store.OpenBadger(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	slow := &atomic.Value{}
	slow.Store("")
	e := newManager(t, dir, func(m *Manager) { m.Store = slowPut{b, slow, time.Second} })
	n := e.startNode("n1", nodeOpts{})
	x, c := e.admitOne("t1"), e.admitOne("t2")
	slow.Store(x)
	n.setSessions(x) // x's STARTED was lost: the next report marks it playing and persists it (1 s)
	waitFor(t, 2*time.Second, "x playing", func() bool { s := e.session(x); return s != nil && s.State == store.StatePlaying })
	time.Sleep(150 * time.Millisecond) // reports taken meanwhile queue behind the slow write
	if err := n.event(c, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	at := e.reports("n1")
	waitFor(t, 5*time.Second, "the queued reports and more", func() bool { return e.reports("n1") >= at+10 })
	if s := e.session(c); s == nil {
		t.Errorf("session %s, started and listed in every report taken since, was ended", c)
	}
	for {
		select {
		case cmd := <-n.cmds:
			if end := cmd.GetEndSessions(); end != nil {
				t.Fatalf("the node was told to end %v", end.GetSessionIds())
			}
		default:
			return
		}
	}
}

// A node whose heartbeat stream breaks (it crashed: the connection is
// reset) gets no new viewer from then on, before its missed heartbeats
// declare it dead; its next report puts it back in service.
func TestBrokenStreamStopsPlacementAtOnce(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.Scheduler.MissedHeartbeats = 50 }) // dead only after 10 s
	n1 := e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001"})
	e.startNode("n2", nodeOpts{rtsp: "127.0.0.1:7002"})
	unreachable := func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		n := e.m.sched.Node("n1")
		return n.Alive && n.Unreachable
	}
	n1.stop()
	waitFor(t, 5*time.Second, "n1 out of service at once", unreachable)
	for i := range 4 {
		res := e.describe("demo", "demo", fmt.Sprintf("t%d", i%2+1))
		if loc := res.Header["Location"]; res.StatusCode != 302 || len(loc) != 1 || !strings.Contains(loc[0], "127.0.0.1:7002") {
			t.Fatalf("request %d after n1's stream broke: %d %v, want n2", i, res.StatusCode, loc)
		}
	}
	n1.heartbeat() // the node is back
	waitFor(t, 5*time.Second, "n1 back in service", func() bool { return !unreachable() })
}
