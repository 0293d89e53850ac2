package acm

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	grpchealth "google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"vodcluster/acm/auth"
	"vodcluster/acm/boss"
	"vodcluster/lsm"
	"vodcluster/proto/token"
	pb "vodcluster/proto/vodcluster/v1"
)

var timeNow = time.Now

var testSecret = []byte("test-cluster-secret-0123456789")

// testUsers: demo/demo entitled to everything, kid/kid to "kids" only.
var testUsers = sync.OnceValue(func() []boss.User {
	demo, err1 := boss.NewUserCost("demo", "demo", DefaultRealm, []string{boss.AllPackages}, bcrypt.MinCost)
	kid, err2 := boss.NewUserCost("kid", "kid", DefaultRealm, []string{"kids"}, bcrypt.MinCost)
	if err := errors.Join(err1, err2); err != nil {
		panic(err)
	}
	return []boss.User{demo, kid}
})

// Catalog of the fake origin: 600 kbit/s titles, one in package "adult".
var testTitles = []*pb.Title{
	{Id: "t1", Name: "One", DurationS: 20, BitrateBps: 600_000, SizeBytes: 1_500_000, Package: "kids"},
	{Id: "t2", Name: "Two", DurationS: 20, BitrateBps: 600_000, SizeBytes: 1_500_000, Package: "kids"},
	{Id: "t3", Name: "Three", DurationS: 20, BitrateBps: 600_000, SizeBytes: 1_500_000, Package: "kids"},
	{Id: "adult-1", Name: "Late", DurationS: 20, BitrateBps: 600_000, SizeBytes: 1_500_000, Package: "adult"},
}

const titleBps = 600_000

// fakeOrigin is an in-test CDP Origin: ListTitles only.
type fakeOrigin struct {
	pb.UnimplementedOriginServer
	mu       sync.Mutex
	titles   []*pb.Title
	changing bool // answer a check_directory with directory_changing (a copy in progress)
	srv      *grpc.Server
	addr     string
	health   *grpchealth.Server // grpc.health.v1: SERVING until a test says otherwise
}

// ListTitles pages as the real origin does (pb.TitlePage); titles more
// than a page must be in id order.
func (o *fakeOrigin) ListTitles(_ context.Context, req *pb.ListTitlesRequest) (*pb.ListTitlesResponse, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	start, end, next, err := pb.TitlePage(len(o.titles), func(i int) string { return o.titles[i].GetId() }, req)
	if err != nil {
		return nil, err
	}
	return &pb.ListTitlesResponse{Titles: o.titles[start:end], NextPageToken: next,
		DirectoryChecked: o.changing && req.GetCheckDirectory(), DirectoryChanging: o.changing && req.GetCheckDirectory()}, nil
}

// unusedPortBelowEphemeral returns a loopback address whose port nothing
// listens on, below Linux's ephemeral range (32768 and up): a client
// dialling a port in that range while nothing listens can be given that
// very port as its own and connect to itself (TCP simultaneous open),
// which then holds the port ("address already in use" when the server
// comes up; seen in CI with a manager retrying a down origin).
func unusedPortBelowEphemeral(t testing.TB) string {
	t.Helper()
	start := 20000 + rand.IntN(10000)
	for i := range 2000 {
		addr := fmt.Sprintf("127.0.0.1:%d", 20000+(start-20000+i)%12000)
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr
		}
	}
	t.Fatal("no free port between 20000 and 32000")
	return ""
}

// startOrigin serves a fake origin on addr ("127.0.0.1:0" for any port)
// with the server options opts.
func startOrigin(t testing.TB, addr string, titles []*pb.Title, opts ...grpc.ServerOption) *fakeOrigin {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	opts = append(opts, grpc.KeepaliveEnforcementPolicy(pb.KeepaliveEnforcement))
	o := &fakeOrigin{titles: titles, srv: grpc.NewServer(opts...), addr: ln.Addr().String(), health: grpchealth.NewServer()}
	pb.RegisterOriginServer(o.srv, o)
	healthpb.RegisterHealthServer(o.srv, o.health)
	go o.srv.Serve(ln)
	t.Cleanup(o.srv.Stop)
	return o
}

// recordingBOSS notes how each successful authentication was made:
// "basic", "digest" or "digest-qop".
type recordingBOSS struct {
	boss.BOSS
	mu      sync.Mutex
	schemes []string
}

func (r *recordingBOSS) Authenticate(ctx context.Context, c boss.Credentials) error {
	err := r.BOSS.Authenticate(ctx, c)
	if err == nil {
		s := "basic"
		if c.Digest != nil {
			s = "digest"
			if c.Digest.QOP != "" {
				s = "digest-qop"
			}
		}
		r.mu.Lock()
		r.schemes = append(r.schemes, s)
		r.mu.Unlock()
	}
	return err
}

func (r *recordingBOSS) used() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.schemes...)
}

type env struct {
	t      testing.TB
	users  *recordingBOSS
	m      *Manager
	origin *fakeOrigin
	admin  pb.AdminClient
	nc     pb.NodeControlClient
	signer *token.Signer
	dir    string
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newManager returns a started manager on loopback with a fake origin;
// configure tweaks it before Start.
func newManager(t testing.TB, dir string, configure func(*Manager)) *env {
	t.Helper()
	return newManagerWith(t, dir, testTitles, configure)
}

// newManagerWith is newManager with the origin's catalog.
func newManagerWith(t testing.TB, dir string, titles []*pb.Title, configure func(*Manager)) *env {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	o := startOrigin(t, "127.0.0.1:0", titles)
	file, err := boss.NewFile(DefaultRealm, testUsers())
	if err != nil {
		t.Fatal(err)
	}
	users := &recordingBOSS{BOSS: file}
	cfg := lsm.DefaultConfig()
	cfg.HeartbeatInterval = 200 * time.Millisecond
	cfg.SlowStart = 0
	m := &Manager{
		RTSPListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", GRPCListen: "127.0.0.1:0",
		DataDir: dir, OriginAddr: o.addr, Secret: testSecret, BOSS: users,
		QueueDeadline: 400 * time.Millisecond, Scheduler: cfg, Logger: testLogger(t),
		// A restart with other nodes than before plans within a test's
		// waits; the tests of the wait set their own (planwait_test.go).
		FirstPlanWait: time.Second,
	}
	if configure != nil {
		configure(m)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	cc, err := grpc.NewClient(m.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(token.Bearer(token.NodeCredential(m.Secret))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	s, _ := token.NewSigner(testSecret)
	return &env{t: t, users: users, m: m, origin: o, admin: pb.NewAdminClient(cc), nc: pb.NewNodeControlClient(cc), signer: s, dir: dir}
}

// fakeNode is a VOD node as the manager sees it: a gRPC client that
// registers, heartbeats every 50 ms and collects commands.
type fakeNode struct {
	t    testing.TB
	id   string
	nc   pb.NodeControlClient
	cmds chan *pb.NodeCommand
	// onCommand: nodeOpts.onCommand (set once, before the first stream).
	onCommand func(*pb.NodeCommand)
	// skew: nodeOpts.skew, added to the times its reports and events carry.
	skew time.Duration

	mu       sync.Mutex
	titles   []*pb.StoredTitle
	sessions []string
	diskFree int64
	failed   []*pb.FillFailure  // sent with the next report, once
	frozen   []*pb.StoredTitle  // when set, reported instead of titles (a stale view)
	stale    []string           // when set, the next report's sessions instead of sessions, once
	partials []*pb.PartialTitle // fills cut short it keeps to resume
	idle     []*pb.IdleSession  // its idle sessions (HTTP, no request lately)
	quiet    []*pb.IdleSession  // its quiet sessions (HTTP, no request in progress, not idle yet)
	paused   []string           // its sessions PAUSEd by their RTSP clients
	finished []string           // its sessions played to the end of the title
	// sent: when set, the bytes each session has sent, in its reports
	// (LoadReport.session_bytes_sent; 0 for a session not in it).
	sent map[string]uint64
	// extraSent: its reports carry one session_bytes_sent figure more
	// than session_ids (a node's bug).
	extraSent bool
	// expects are the ExpectCommands received, in order: kept apart
	// from cmds and onCommand (one comes with every admission).
	expects []*pb.ExpectCommand
	muted   bool // the periodic reports are not sent (mute: a node between two heartbeats)
	// diskFault: its reports say it cannot write its title cache.
	diskFault bool

	cancel context.CancelFunc
	done   chan struct{}
	bye    chan struct{} // closed by leave: the stream ends cleanly
}

type nodeOpts struct {
	egress   int64 // bit/s
	rtsp     string
	http     string
	titles   []*pb.StoredTitle
	diskFree int64
	noHTTP   bool  // register without an HTTP address
	disk     int64 // capacity.disk_bytes, default 1 TiB
	site     string
	rtsps    string // its RTSPS address; "" = none
	httpTLS  bool   // its HTTP address speaks HTTPS
	noOrigin bool   // it has no origin: it plays only its titles (RegisterRequest.no_origin)
	tcpOnly  bool   // it sends RTSP media over TCP only (RegisterRequest.tcp_only)
	// started: when its process started (RegisterRequest.started_at_unix_ms); zero: unknown.
	started time.Time
	// pauseTimeout: its pause_timeout (RegisterRequest.pause_timeout_ms); 0: unknown.
	pauseTimeout time.Duration
	// skew: how far the node's clock is ahead of the manager's (behind
	// when negative): added to the times of its reports and events.
	skew time.Duration
	// onCommand, when set, takes each command as the stream receives it,
	// in order, instead of the cmds channel (a node that applies its
	// commands as they come, before its next report).
	onCommand func(*pb.NodeCommand)
}

func (e *env) startNode(id string, o nodeOpts) *fakeNode {
	e.t.Helper()
	if o.egress == 0 {
		o.egress = 10 * titleBps
	}
	if o.rtsp == "" {
		o.rtsp = "127.0.0.1:1"
	}
	if o.http == "" && !o.noHTTP {
		o.http = "127.0.0.1:2"
	}
	if o.disk == 0 {
		o.disk = 1 << 40
	}
	if o.diskFree == 0 {
		o.diskFree = o.disk
	}
	n := &fakeNode{t: e.t, id: id, nc: e.nc, cmds: make(chan *pb.NodeCommand, 64), titles: o.titles, diskFree: o.diskFree, onCommand: o.onCommand, skew: o.skew}
	var started int64
	if !o.started.IsZero() {
		started = o.started.UnixMilli()
		// A node's reports are taken after its process started: a start
		// the test sets a few milliseconds ahead (on the node's clock) is
		// let pass first, or the first report could carry an earlier time
		// than the start and the manager rightly disbelieve it.
		time.Sleep(time.Until(o.started.Add(-o.skew).Add(2 * time.Millisecond)))
	}
	_, err := e.nc.Register(context.Background(), &pb.RegisterRequest{
		NodeId: id, RtspAddr: o.rtsp, HttpAddr: o.http, Titles: o.titles, Site: o.site, RtspsAddr: o.rtsps, HttpTls: o.httpTLS, NoOrigin: o.noOrigin, TcpOnly: o.tcpOnly,
		Capacity: &pb.NodeCapacity{EgressBps: o.egress, DiskBytes: o.disk}, StartedAtUnixMs: started,
		PauseTimeoutMs: o.pauseTimeout.Milliseconds(),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	n.heartbeat()
	e.t.Cleanup(n.stop)
	waitFor(e.t, 5*time.Second, "the node's first report", func() bool { return e.reports(id) > 0 })
	return n
}

// reports returns how many load reports the manager took from node id.
func (e *env) reports(id string) uint64 {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	if ns := e.m.nodes[id]; ns != nil {
		return ns.reports
	}
	return 0
}

func (n *fakeNode) report() *pb.LoadReport {
	n.mu.Lock()
	defer n.mu.Unlock()
	titles := n.titles
	if n.frozen != nil {
		titles = n.frozen
	}
	sessions := n.sessions
	if n.stale != nil {
		sessions, n.stale = n.stale, nil
	}
	r := &pb.LoadReport{NodeId: n.id, AtUnixMs: time.Now().Add(n.skew).UnixMilli(), Titles: titles,
		SessionIds: append([]string(nil), sessions...), DiskFreeBytes: n.diskFree, FailedFills: n.failed, Partials: n.partials,
		IdleSessions: n.idle, QuietSessions: n.quiet, PausedSessions: n.paused, FinishedSessions: n.finished, DiskFault: n.diskFault}
	if n.sent != nil {
		for _, id := range r.SessionIds {
			r.SessionBytesSent = append(r.SessionBytesSent, n.sent[id])
		}
	}
	if n.extraSent {
		r.SessionBytesSent = append(r.SessionBytesSent, 1)
	}
	n.failed = nil
	return r
}

// setSent makes its reports say session sid has sent b bytes so far.
func (n *fakeNode) setSent(sid string, b uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.sent == nil {
		n.sent = map[string]uint64{}
	}
	n.sent[sid] = b
}

// heartbeat opens the stream; the first report is sent before it returns.
func (n *fakeNode) heartbeat() {
	ctx, cancel := context.WithCancel(context.Background())
	st, err := n.nc.Heartbeat(ctx)
	if err != nil {
		n.t.Fatal(err)
	}
	if err := st.Send(n.report()); err != nil {
		n.t.Fatal(err)
	}
	done, cmds, bye := make(chan struct{}), n.cmds, make(chan struct{})
	n.cancel, n.done, n.bye = cancel, done, bye
	go func() {
		for {
			c, err := st.Recv()
			if err != nil {
				return
			}
			if x := c.GetExpect(); x != nil {
				n.mu.Lock()
				n.expects = append(n.expects, x)
				n.mu.Unlock()
				continue
			}
			if n.onCommand != nil {
				n.onCommand(c)
				continue
			}
			cmds <- c
		}
	}()
	go func() {
		defer close(done)
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-bye:
				st.CloseSend()
				return
			case <-tk.C:
				n.mu.Lock()
				muted := n.muted
				n.mu.Unlock()
				if muted {
					continue
				}
				if st.Send(n.report()) != nil {
					return
				}
			}
		}
	}()
}

// leave ends the heartbeat stream cleanly, as a node that shuts down does.
func (n *fakeNode) leave() {
	close(n.bye)
	<-n.done
}

// stop breaks the heartbeat stream (the node died or lost the network).
func (n *fakeNode) stop() {
	if n.cancel != nil {
		n.cancel()
		<-n.done
		n.cancel = nil
	}
}

// mute stops the periodic reports (true) or sends them again (false).
func (n *fakeNode) mute(on bool) {
	n.mu.Lock()
	n.muted = on
	n.mu.Unlock()
}

// freeze makes the reports show the titles of now until thaw.
func (n *fakeNode) freeze() {
	n.mu.Lock()
	n.frozen = append([]*pb.StoredTitle{}, n.titles...)
	n.mu.Unlock()
}

func (n *fakeNode) thaw() {
	n.mu.Lock()
	n.frozen = nil
	n.mu.Unlock()
}

func (n *fakeNode) setSessions(ids ...string) {
	n.mu.Lock()
	n.sessions = ids
	n.mu.Unlock()
}

// setIdle makes the reports list sessions idle (id, seconds, id,
// seconds...), none without arguments.
func (n *fakeNode) setIdle(idle ...any) {
	out := idleEntries(idle)
	n.mu.Lock()
	n.idle = out
	n.mu.Unlock()
}

// idleEntries makes the entries of id, seconds pairs.
func idleEntries(pairs []any) []*pb.IdleSession {
	var out []*pb.IdleSession
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, &pb.IdleSession{SessionId: pairs[i].(string), IdleSeconds: int64(pairs[i+1].(int))})
	}
	return out
}

// setQuiet lists, in the next reports, the quiet sessions given as id,
// seconds pairs.
func (n *fakeNode) setQuiet(quiet ...any) {
	out := idleEntries(quiet)
	n.mu.Lock()
	n.quiet = out
	n.mu.Unlock()
}

// event reports a session event of sid, and lists sid in the following
// load reports from a STARTED until its ENDED, as a node does (a node
// lists a session before it reports it STARTED).
func (n *fakeNode) event(sid string, kind pb.SessionEvent_Kind) error {
	n.mu.Lock()
	switch i := slices.Index(n.sessions, sid); {
	case kind == pb.SessionEvent_KIND_STARTED && i < 0:
		n.sessions = append(slices.Clip(n.sessions), sid)
	case kind == pb.SessionEvent_KIND_ENDED && i >= 0:
		n.sessions = slices.Delete(slices.Clone(n.sessions), i, i+1)
	}
	n.mu.Unlock()
	_, err := n.nc.ReportSession(context.Background(), &pb.SessionEvent{NodeId: n.id, SessionId: sid, Kind: kind, Reason: "test",
		AtUnixMs: time.Now().Add(n.skew).UnixMilli()})
	return err
}

// waitForMin is the least bound of waitFor.
const waitForMin = 10 * time.Second

// waitFor polls cond every 10 ms until it holds or d passes; d is at
// least waitForMin, a bound for a loaded CI machine under the race
// detector (the wait ends as soon as cond holds).
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	d = max(d, waitForMin)
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *env) nodeInfo(id string) *pb.NodeInfo {
	e.t.Helper()
	r, err := e.admin.ListNodes(context.Background(), &pb.ListNodesRequest{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, n := range r.Nodes {
		if n.NodeId == id {
			return n
		}
	}
	e.t.Fatalf("node %s not listed", id)
	return nil
}

func (e *env) reserved(id string) int64 { return e.nodeInfo(id).ReservedBps }

func (e *env) sessions() []*pb.SessionInfo {
	e.t.Helper()
	r, err := e.admin.ListSessions(context.Background(), &pb.ListSessionsRequest{})
	if err != nil {
		e.t.Fatal(err)
	}
	return r.Sessions
}

func (e *env) queued() int {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	return e.m.sched.Queued()
}

// tokenOf extracts and verifies the token of a front door Location.
func (e *env) tokenOf(loc, scheme, nodeAddr, title, suffix string) *token.Claims {
	e.t.Helper()
	prefix := scheme + "://" + nodeAddr + "/s/"
	rest, ok := strings.CutPrefix(loc, prefix)
	if !ok {
		e.t.Fatalf("Location %q does not start with %q", loc, prefix)
	}
	tok, path, ok := strings.Cut(rest, "/")
	if !ok || "/"+path != "/vod/"+title+suffix {
		e.t.Fatalf("Location %q: path after token %q, want /vod/%s%s", loc, path, title, suffix)
	}
	c, err := e.signer.Verify(tok, time.Now(), title, "", "127.0.0.1")
	if err != nil {
		e.t.Fatalf("token of %q: %v", loc, err)
	}
	// The token names the front door's protocol (the node refuses it over
	// another): an https:// redirect comes from the HTTP front door.
	if want := strings.TrimSuffix(scheme, "s"); c.Proto != scheme && !(scheme == "https" && c.Proto == want) {
		e.t.Fatalf("token of %q issued for protocol %q, want %q", loc, c.Proto, scheme)
	}
	return c
}

func grpcCode(err error) codes.Code { return status.Code(err) }

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// NewNoncesForTest returns a nonce issuer under another secret.
func NewNoncesForTest(secret []byte) *auth.Nonces { return auth.NewNonces(secret, 0) }

func regReq(id, rtsp, http string, egress int64) *pb.RegisterRequest {
	return &pb.RegisterRequest{NodeId: id, RtspAddr: rtsp, HttpAddr: http, Capacity: &pb.NodeCapacity{EgressBps: egress, DiskBytes: 1 << 30}}
}

type lsmConfig = lsm.Config

func defaultLSM() lsm.Config { return lsm.DefaultConfig() }
