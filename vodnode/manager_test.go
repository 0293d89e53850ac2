package vodnode

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/proto/grpctls"
	"vodcluster/proto/grpctls/grpctlstest"
	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// fakeManager is an in-test NodeControl server that records what nodes
// send and can push commands down the heartbeat stream.
type fakeManager struct {
	pb.UnimplementedNodeControlServer
	mu           sync.Mutex
	registers    []*pb.RegisterRequest
	reports      []*pb.LoadReport
	events       []*pb.SessionEvent
	cmds         chan *pb.NodeCommand
	byes         int           // heartbeat streams the node ended cleanly
	interval     time.Duration // heartbeat interval it answers at registration; 0: 1 s
	refuse       error         // answered to every registration when set
	refuseReport error         // answered to the first load report of every heartbeat stream when set
}

func newFakeManager() *fakeManager { return &fakeManager{cmds: make(chan *pb.NodeCommand, 16)} }

func (m *fakeManager) Register(_ context.Context, r *pb.RegisterRequest) (*pb.RegisterResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.registers = append(m.registers, r)
	if m.refuse != nil {
		return nil, m.refuse
	}
	iv := m.interval
	if iv == 0 {
		iv = time.Second
	}
	return &pb.RegisterResponse{HeartbeatIntervalMs: iv.Milliseconds()}, nil
}

func (m *fakeManager) Heartbeat(s grpc.BidiStreamingServer[pb.LoadReport, pb.NodeCommand]) error {
	errc := make(chan error, 1)
	go func() {
		for {
			r, err := s.Recv()
			if errors.Is(err, io.EOF) {
				m.mu.Lock()
				m.byes++
				m.mu.Unlock()
				errc <- nil
				return
			}
			if err != nil {
				errc <- err
				return
			}
			m.mu.Lock()
			m.reports = append(m.reports, r)
			refuse := m.refuseReport
			m.mu.Unlock()
			if refuse != nil {
				errc <- refuse
				return
			}
		}
	}()
	for {
		select {
		case err := <-errc:
			return err
		case c := <-m.cmds:
			if err := s.Send(c); err != nil {
				return err
			}
		}
	}
}

func (m *fakeManager) ReportSession(_ context.Context, e *pb.SessionEvent) (*pb.SessionEventAck, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, e)
	return &pb.SessionEventAck{}, nil
}

// startFastManager serves a fakeManager that answers a heartbeat interval
// of 50 ms, for tests that read the node's load reports; it returns the
// manager and its address for Node.ManagerAddr.
func startFastManager(t *testing.T) (*fakeManager, string) {
	t.Helper()
	m := newFakeManager()
	m.interval = 50 * time.Millisecond
	return m, serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
}

// reportAfter waits up to 10 s for a load report taken after the call
// that satisfies cond, and returns it; the test fails without one.
func (m *fakeManager) reportAfter(t *testing.T, what string, cond func(*pb.LoadReport) bool) *pb.LoadReport {
	t.Helper()
	after := time.Now().UnixMilli()
	var got *pb.LoadReport
	waitFor(t, 10*time.Second, what, func() bool {
		r := m.lastReport()
		if r != nil && r.GetAtUnixMs() > after && cond(r) {
			got = r
			return true
		}
		return false
	})
	return got
}

func (m *fakeManager) lastReport() *pb.LoadReport {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.reports) == 0 {
		return nil
	}
	return m.reports[len(m.reports)-1]
}

func (m *fakeManager) event(sid string, kind pb.SessionEvent_Kind) *pb.SessionEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.events {
		if e.GetSessionId() == sid && e.GetKind() == kind {
			return e
		}
	}
	return nil
}

// eventsOf returns the events of kind reported for sid, in order.
func (m *fakeManager) eventsOf(sid string, kind pb.SessionEvent_Kind) []*pb.SessionEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*pb.SessionEvent
	for _, e := range m.events {
		if e.GetSessionId() == sid && e.GetKind() == kind {
			out = append(out, e)
		}
	}
	return out
}

func (m *fakeManager) registrations() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.registers)
}

func titleIn(r *pb.LoadReport, id string) *pb.StoredTitle {
	for _, t := range r.GetTitles() {
		if t.GetTitleId() == id {
			return t
		}
	}
	return nil
}

func TestManagerLink(t *testing.T) {
	o := newFakeOrigin(t)
	// The fill its SETUP starts sends nothing for 2 s: the PLAY comes
	// before it completes (STARTED says filled) even on a loaded machine.
	o.delay = 2 * time.Second
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), func(n *Node) {
		n.ManagerAddr = maddr
		n.HeartbeatInterval = 100 * time.Millisecond
		n.AdvertiseHost = "vod1.example"
		n.Capacity = Capacity{EgressBps: 1e9, MaxSessions: 100, DiskBytes: 1e9}
		n.Weight = 50
	})
	waitFor(t, 5*time.Second, "registration", func() bool { return m.registrations() > 0 })
	m.mu.Lock()
	reg := m.registers[0]
	m.mu.Unlock()
	if reg.GetNodeId() != "node-1" || reg.GetRtspAddr() != "vod1.example:"+itoa(portOf(n.RTSPAddr())) ||
		reg.GetWeight() != 50 || reg.GetCapacity().GetMaxSessions() != 100 || reg.GetCapacity().GetDiskBytes() != 1e9 {
		t.Fatalf("register %+v", reg)
	}

	c := dialRTSP(t, n)
	url := nodeURL(n, mint(t, "adm-1", "sample-001", "node-1", "", time.Minute), "sample-001")
	sess := c.play(url)
	for range 20 { // let some media flow
		if _, _, err := c.frame(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "STARTED", func() bool { return m.event("adm-1", pb.SessionEvent_KIND_STARTED) != nil })
	if e := m.event("adm-1", pb.SessionEvent_KIND_STARTED); !e.GetFilled() || e.GetTitleId() != "sample-001" || e.GetNodeId() != "node-1" {
		t.Errorf("STARTED %+v", e)
	}
	waitFor(t, 5*time.Second, "a report with the session, its title filled", func() bool {
		r := m.lastReport()
		st := titleIn(r, "sample-001")
		return r != nil && r.GetSessions() == 1 && slices.Contains(r.GetSessionIds(), "adm-1") &&
			r.GetEgressBps() > 0 && st != nil && st.GetSessions() == 1 && !st.GetFilling()
	})
	r := m.lastReport()
	if r.GetNodeId() != "node-1" || r.GetDiskUsedBytes() != int64(len(o.titles["sample-001"])) ||
		r.GetDiskFreeBytes() != 1e9-r.GetDiskUsedBytes() || r.GetAtUnixMs() == 0 {
		t.Errorf("report %+v", r)
	}
	if res := c.do("TEARDOWN", url+"/", "Session", sess); res.StatusCode != 200 {
		t.Fatal(statusLine(res))
	}
	waitFor(t, 5*time.Second, "ENDED", func() bool { return m.event("adm-1", pb.SessionEvent_KIND_ENDED) != nil })
	if e := m.event("adm-1", pb.SessionEvent_KIND_ENDED); e.GetReason() != "teardown" || e.GetBytesSent() <= 0 {
		t.Errorf("ENDED %+v", e)
	}

	// commands: prefetch, evict, drain
	m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_Prefetch{Prefetch: &pb.PrefetchCommand{TitleId: "sample-002"}}}
	waitComplete(t, n, "sample-002")
	if o.fetchCount("sample-002") != 1 {
		t.Errorf("prefetch fetches %d", o.fetchCount("sample-002"))
	}
	waitFor(t, 5*time.Second, "prefetched title reported", func() bool {
		st := titleIn(m.lastReport(), "sample-002")
		return st != nil && st.GetPrefetch() && st.GetStoredBytes() == st.GetSizeBytes()
	})
	sess3 := c.play(nodeURL(n, mint(t, "adm-3", "sample-002", "node-1", "", time.Minute), "sample-002"))
	m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_Evict{Evict: &pb.EvictCommand{TitleId: "sample-002"}}} // playing: ignored
	m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_Evict{Evict: &pb.EvictCommand{TitleId: "sample-001"}}} // idle: evicted
	waitFor(t, 5*time.Second, "evicted", func() bool {
		ids := storedIDs(n)
		return !slices.Contains(ids, "sample-001")
	})
	if !slices.Contains(storedIDs(n), "sample-002") {
		t.Error("a playing title was evicted")
	}
	// A session the manager no longer holds is ended when it says so.
	sess4 := c.play(nodeURL(n, mint(t, "adm-gone", "sample-002", "node-1", "", time.Minute), "sample-002"))
	m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_EndSessions{EndSessions: &pb.EndSessionsCommand{
		SessionIds: []string{"adm-gone", "never-here"}, Reason: "ended by the manager"}}}
	waitFor(t, 5*time.Second, "the session the manager ended", func() bool { return n.lookupSession(sess4) == nil })
	if n.lookupSession(sess3) == nil {
		t.Fatal("EndSessions ended a session it did not name")
	}
	m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_Drain{Drain: &pb.DrainCommand{Drain: true}}}
	waitFor(t, 5*time.Second, "draining", func() bool {
		res := c.do("DESCRIBE", nodeURL(n, mint(t, "adm-4", "sample-001", "node-1", "", time.Minute), "sample-001"))
		return res.StatusCode == 503
	})

	// Closing, the node first ends its heartbeat stream cleanly (the
	// manager takes it out of service at once), then its sessions.
	n.Close()
	m.mu.Lock()
	byes := m.byes
	m.mu.Unlock()
	if byes != 1 {
		t.Fatalf("heartbeat streams ended cleanly at Close: %d, want 1", byes)
	}
	if e := m.event("adm-3", pb.SessionEvent_KIND_ENDED); e == nil || e.GetReason() != "shutdown" {
		t.Fatalf("the playing session's end at Close: %+v", e)
	}
}

// TestManagerReconnect: a node started while the manager is down keeps
// serving, registers when the manager comes up, and registers again when
// the manager restarts.
func TestManagerReconnect(t *testing.T) {
	addr := reusableAddr(t)
	n := startNode(t, startOrigin(t, newFakeOrigin(t)), func(n *Node) {
		n.ManagerAddr = addr
		n.HeartbeatInterval = 50 * time.Millisecond
	})
	c := dialRTSP(t, n)
	c.play(nodeURL(n, mint(t, "r1", "sample-001", "node-1", "", time.Minute), "sample-001"))

	up := func(m *fakeManager) *grpc.Server {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		s := grpc.NewServer(grpc.KeepaliveEnforcementPolicy(pb.KeepaliveEnforcement))
		pb.RegisterNodeControlServer(s, m)
		go s.Serve(l)
		return s
	}
	m1 := newFakeManager()
	s1 := up(m1)
	waitFor(t, 15*time.Second, "registration after the manager came up", func() bool { return m1.lastReport() != nil })
	// the STARTED event queued while the manager was down is delivered
	waitFor(t, 15*time.Second, "queued STARTED", func() bool { return m1.event("r1", pb.SessionEvent_KIND_STARTED) != nil })
	// Drained by the first manager: the drain is that manager's order and
	// ends with its registration (the next manager drains the node again
	// if it wants it drained).
	m1.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_Drain{Drain: &pb.DrainCommand{Drain: true}}}
	waitFor(t, 15*time.Second, "the drain", n.draining.Load)
	s1.Stop()
	m2 := newFakeManager()
	s2 := up(m2)
	defer s2.Stop()
	waitFor(t, 15*time.Second, "re-registration", func() bool { return m2.registrations() > 0 && m2.lastReport() != nil })
	if n.draining.Load() {
		t.Error("still draining after registering with another manager")
	}
	if r := m2.lastReport(); r.GetSessions() != 1 {
		t.Errorf("report after reconnect: %+v", r)
	}
}

func itoa(v int) string { return strconv.Itoa(v) }

// reusableAddr returns a free loopback address whose port lies below
// Linux's ephemeral range (32768-60999 by default), for a server that
// stops and listens again on it: a freed ephemeral port can be taken
// meanwhile as the local port of any outgoing connection.
func reusableAddr(t *testing.T) string {
	t.Helper()
	for range 200 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(20000+rand.IntN(12000)))
		if l, err := net.Listen("tcp", addr); err == nil {
			l.Close()
			return addr
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return ""
}

// TestManagerLinkProtectAndFailures: a ProtectCommand reaches the store (a
// protected title survives a fill that needs room), and a prefetch the node
// cannot carry out comes back once in a load report's failed_fills.
func TestManagerLinkProtectAndFailures(t *testing.T) {
	o := newFakeOrigin(t)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	size := int64(len(o.titles["sample-001"]))
	n := startNode(t, startOrigin(t, o), func(n *Node) {
		n.ManagerAddr = maddr
		n.HeartbeatInterval = 50 * time.Millisecond
		n.Capacity = Capacity{EgressBps: 1e9, DiskBytes: 2*size + 1<<20} // two titles
	})
	waitFor(t, 5*time.Second, "registration", func() bool { return m.registrations() > 0 })
	for _, id := range []string{"sample-001", "sample-004"} { // same clip, same size
		m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_Prefetch{Prefetch: &pb.PrefetchCommand{TitleId: id}}}
		waitComplete(t, n, id)
	}
	m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_Protect{Protect: &pb.ProtectCommand{TitleIds: []string{"sample-001"}}}}
	m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_Prefetch{Prefetch: &pb.PrefetchCommand{TitleId: "sample-007"}}}
	waitComplete(t, n, "sample-007")
	if ids := storedIDs(n); !slices.Contains(ids, "sample-001") || slices.Contains(ids, "sample-004") {
		t.Fatalf("stored %v: want the protected sample-001 kept and sample-004 evicted", ids)
	}

	m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_Prefetch{Prefetch: &pb.PrefetchCommand{TitleId: "no-such-title"}}}
	var failed []*pb.FillFailure
	waitFor(t, 10*time.Second, "the failed prefetch in a report", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		failed = failed[:0]
		for _, r := range m.reports {
			failed = append(failed, r.GetFailedFills()...)
		}
		return len(failed) > 0
	})
	// Reports keep coming; the failure must not repeat.
	waitFor(t, 5*time.Second, "two more reports", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.reports) > 0 && len(m.reports[len(m.reports)-1].GetFailedFills()) == 0
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	total := 0
	for _, r := range m.reports {
		for _, f := range r.GetFailedFills() {
			total++
			if f.GetTitleId() != "no-such-title" || !f.GetPrefetch() || f.GetReason() == "" || f.GetAtUnixMs() == 0 {
				t.Errorf("failure %+v", f)
			}
		}
	}
	if total != 1 {
		t.Fatalf("the failed prefetch was reported %d times, want once", total)
	}
}

// TestManagerLinkEmptyProtectLiftsPins: a ProtectCommand of no title (the
// manager tells a node its pins at every registration, none included)
// leaves no title protected: the titles of the set before it are the
// node's eviction's to remove again. With both stored titles protected a
// prefetch needing room fails; after the empty set it evicts one.
func TestManagerLinkEmptyProtectLiftsPins(t *testing.T) {
	o := newFakeOrigin(t)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	size := int64(len(o.titles["sample-001"]))
	n := startNode(t, startOrigin(t, o), func(n *Node) {
		n.ManagerAddr = maddr
		n.HeartbeatInterval = 50 * time.Millisecond
		n.Capacity = Capacity{EgressBps: 1e9, DiskBytes: 2*size + 1<<20} // two titles
	})
	waitFor(t, 5*time.Second, "registration", func() bool { return m.registrations() > 0 })
	prefetch := func(id string) {
		m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_Prefetch{Prefetch: &pb.PrefetchCommand{TitleId: id}}}
	}
	protect := func(ids ...string) {
		m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_Protect{Protect: &pb.ProtectCommand{TitleIds: ids}}}
	}
	for _, id := range []string{"sample-001", "sample-004"} { // same clip, same size
		prefetch(id)
		waitComplete(t, n, id)
	}
	protect("sample-001", "sample-004")
	prefetch("sample-007")
	waitFor(t, 10*time.Second, "the prefetch of sample-007 failed in a report", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, r := range m.reports {
			for _, f := range r.GetFailedFills() {
				if f.GetTitleId() == "sample-007" {
					return true
				}
			}
		}
		return false
	})
	protect() // none
	prefetch("sample-007")
	waitComplete(t, n, "sample-007")
	if ids := storedIDs(n); len(ids) != 2 {
		t.Fatalf("stored %v: want sample-007 and one of the titles no longer protected", ids)
	}
}

// TestManagerHeartbeatInterval: a manager that judges liveness on a
// shorter heartbeat interval than the node's gets reports at its own:
// twenty reports within twenty of the node's intervals would be 20 s.
func TestManagerHeartbeatInterval(t *testing.T) {
	m, maddr := startFastManager(t)
	startNode(t, startOrigin(t, newFakeOrigin(t)), func(n *Node) {
		n.ManagerAddr = maddr
		n.HeartbeatInterval = time.Hour
	})
	waitFor(t, 10*time.Second, "twenty reports", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.reports) >= 20
	})
}

// A node registers its site and, with HTTPS, http_tls, so that the
// manager keeps its site's viewers on it and redirects HTTP viewers to
// https://; a node without them registers neither.
func TestRegistrationCarriesSiteAndHTTPS(t *testing.T) {
	dir := t.TempDir()
	f, err := grpctlstest.Write(dir, "", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := grpctls.ServerConfig(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		site  string
		https bool
	}{{"north", true}, {"", false}} {
		o := newFakeOrigin(t)
		m := newFakeManager()
		maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
		startNode(t, startOrigin(t, o), withHTTP, func(n *Node) {
			n.ManagerAddr, n.Site = maddr, tc.site
			if tc.https {
				n.HTTPTLS = cfg
			}
		})
		waitFor(t, 5*time.Second, "registration", func() bool { return m.registrations() > 0 })
		m.mu.Lock()
		r := m.registers[0]
		m.mu.Unlock()
		if r.GetSite() != tc.site || r.GetHttpTls() != tc.https {
			t.Fatalf("registered site %q http_tls %v, want %q %v", r.GetSite(), r.GetHttpTls(), tc.site, tc.https)
		}
	}
}

// A registration the manager refuses as invalid (an address it cannot
// hand to viewers, a capacity or weight out of range) is logged as an
// error naming the manager's reason and what to fix, not as a link down
// (a warning that reads like a network fault, retried for ever).
func TestRegistrationRefusedIsAnError(t *testing.T) {
	m := newFakeManager()
	m.refuse = status.Error(codes.InvalidArgument, `rtsp_addr "[::]:8555" means every address: set advertise_host`)
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	var log logtest.Buffer
	startNode(t, startOrigin(t, newFakeOrigin(t)), func(n *Node) {
		n.ManagerAddr = maddr
		n.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	want := `level=ERROR msg="the manager refuses this node's registration: fix the address the node announces (advertise_host`
	waitFor(t, 10*time.Second, "the refusal logged", func() bool { return strings.Contains(log.String(), want) })
	if out := log.String(); !strings.Contains(out, "means every address: set advertise_host") || strings.Contains(out, "manager link down") {
		t.Fatalf("log:\n%s", out)
	}
}
