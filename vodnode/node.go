package vodnode

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"vodcluster/proto/connlimit"
	"vodcluster/proto/metricshttp"
	"vodcluster/proto/token"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
	"vodcluster/vodnode/deliver"
	"vodcluster/vodnode/store"
)

// Capacity is what a node offers, the limits it enforces itself and reports
// to the manager.
type Capacity struct {
	EgressBps   int64 // bit/s the node may stream in total (sum of its sessions' title bitrates); 0 = unlimited
	MaxSessions int   // concurrent sessions; 0 = unlimited
	DiskBytes   int64 // bytes the stored titles may take; 0 = unlimited
}

// DefaultPauseTimeout is Node.PauseTimeout when it is not set:
// 5 minutes, so that a viewer pausing an HLS film for a few minutes (its
// player asks for nothing meanwhile) resumes in the same session.
const DefaultPauseTimeout = 5 * time.Minute

// Node is a VOD server node. Set the exported fields, then Start; Close
// stops it. Zero values take the defaults given.
type Node struct {
	ID         string // node id, as the admission tokens name it (required)
	DataDir    string // titles live in DataDir/titles (required)
	RTSPListen string // RTSP listen address; "" = 127.0.0.1:0
	HTTPListen string // HTTP listen address; "" = no HTTP delivery
	// Site is the operator's site (point of presence) the node stands in:
	// the manager keeps viewers of that site's client addresses on its
	// nodes first (acm.Manager.Sites). "" = none.
	Site string
	// HTTPTLS, when set, makes HTTPListen HTTPS (only) with this
	// configuration (grpctls.ServerConfig), and the node registers so:
	// the front door redirects HTTP viewers to https://. Nil: plain HTTP.
	HTTPTLS *tls.Config
	// RTSPSListen and RTSPTLS, both set, add an RTSPS listener (RTSP over
	// TLS, rtsps://) beside the plain one, with this configuration
	// (grpctls.ServerConfig); the node registers its address, and the
	// front door sends viewers that came to it over RTSPS there. Media go
	// interleaved in the TLS connection; a viewer may still ask for UDP,
	// whose packets are not encrypted. "" or nil: no RTSPS.
	RTSPSListen   string
	RTSPTLS       *tls.Config
	MetricsListen string // Prometheus /metrics listen address (metrics.go); "" = none
	AdvertiseHost string // host reported to the manager; "" = the RTSP listener's
	RTPPort       int    // even UDP port for RTP (RTCP on the next); 0 = a free pair
	// TCPOnly: the node sends RTSP media over TCP only, interleaved in
	// the RTSP connection (RFC 2326 §10.12). It opens no UDP port, and
	// answers 461 Unsupported Transport (rtspwire.ErrNoUDP) to a SETUP
	// that offers only UDP, so that players set up again over TCP at once
	// (ffmpeg, ffprobe, GStreamer's rtspsrc) instead of waiting for UDP
	// packets a network drops. It registers so (RegisterRequest.tcp_only),
	// and the manager sends it no SETUP that offers only UDP.
	TCPOnly  bool
	Capacity Capacity // limits
	Weight   int      // scheduling weight reported at registration; 0 = 100

	ManagerAddr string // gRPC NodeControl address; "" = standalone, no reports
	OriginAddr  string // gRPC Origin address; "" = serve stored titles only
	Secret      []byte // admission token HMAC key (at least 16 bytes, required)
	// ManagerCreds and OriginCreds are the transport credentials of the
	// connections to ManagerAddr and OriginAddr (grpctls.Client: TLS);
	// nil: plaintext.
	ManagerCreds, OriginCreds credentials.TransportCredentials

	// FillRetryFor is how long a fill from the origin keeps retrying while
	// the origin sends nothing (an origin restart) before it fails and
	// ends its viewers, not counting the time its retries wait queued at
	// a busy origin for a channel; 0 = store.DefaultRetryFor (30 s).
	FillRetryFor time.Duration

	HeartbeatInterval time.Duration // load report period; 0 = 1 s; the manager's (RegisterResponse) when shorter
	SessionTimeout    time.Duration // a session without requests or RTCP this long is closed; 0 = 60 s
	// PauseTimeout is how long a paused viewer's session lives without a
	// word: an HTTP session (progressive or HLS) with no request in
	// progress (a paused HLS player asks for nothing once its buffer is
	// full, and HTTP has no keepalive), and an RTSP session its client
	// PAUSEd (players stop their keepalives while paused). A pause longer
	// than this (plus an HLS player's buffer) ends the session, and the
	// player must go back to the front door. 0 = DefaultPauseTimeout;
	// never less than SessionTimeout. Each viewer that leaves that way
	// holds its reservation this long (its subscriber's next request at
	// the session limit supersedes it: the load report lists it idle).
	PauseTimeout time.Duration
	Evictor      string       // eviction policy name (smm); "" = lru
	Logger       *slog.Logger // nil = slog.Default()
	// OriginRanges is how many origin reads of what viewers ask for far
	// ahead of their title's fill (an HTTP player's probe of a title's
	// end; a viewer resuming far into a title being filled, with an HTTP
	// range, httpahead.go, or an RTSP PLAY Range, rtspahead.go) the node
	// has open at a time, each a preemptible origin transfer the
	// manager's budget does not count: 0 = 1 (DefaultOriginRanges);
	// negative = none (they wait for their fills).
	OriginRanges int
	// MaxConnsPerAddr caps the open connections (RTSP, RTSPS and HTTP
	// together) of one client address (an IPv6 client's /64): one more
	// is answered 503 and closed at accept (proto/connlimit; closed bare
	// on RTSPS and HTTPS), counted in vodnode_connections_refused_total.
	// 0 means DefaultMaxConnsPerAddr; < 0 means no limit.
	MaxConnsPerAddr int

	Pacers int           // pacer goroutines of the delivery engine; 0 = GOMAXPROCS
	Tick   time.Duration // pacer period; 0 = 5 ms

	connLimit    *connlimit.Limiter // connections per client address over the listeners; nil: no limit
	connsRefused refusedCounts      // connections conns refused, by listener

	signer  *token.Signer
	store   *store.Store
	engine  *deliver.Engine
	udp     *deliver.UDPServer
	rtspLn  net.Listener
	rtspsLn net.Listener // nil: no RTSPS
	httpSrv *httpServer
	origin  *grpc.ClientConn
	mgr     *managerLink
	log     *slog.Logger
	// fillEnded is signalled (without blocking) when a fill ends: the
	// manager link sends a load report at once (manager.go).
	fillEnded chan struct{}
	// startedAt is when Start ran: RegisterRequest.started_at_unix_ms.
	startedAt time.Time

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	draining  atomic.Bool
	metrics   *metricshttp.Server // MetricsListen's endpoint, or nil
	httpBytes atomic.Int64        // bytes sent over HTTP
	// ahead: origin reads of HTTP ranges ahead of their fill open
	// (titleReader.openAhead; at most OriginRanges), and the ranges
	// waiting for one.
	ahead aheadSlots
	send  sendStats // HTTP sends copied instead of sendfile, and title reads failed (httpsendstats.go)

	// describeGrace and describedSettled: see describeonly.go (tests set
	// them before Start; zero: defaultDescribeGrace, no hook).
	describeGrace    time.Duration
	describedSettled func()
	// maxLag, when set (tests, before Start), is the delivery engine's
	// MaxLag (zero: deliver's default, 5 s); rtspQueue and rtspSendBuffer,
	// when set, bound each RTSP (and RTSPS) connection's writer queue and
	// its socket's send buffer (SO_SNDBUF), bytes (zero: deliver.DefaultQueueLimit and
	// the kernel's autotuning), so that a stream falls behind a player
	// that stopped reading within a test's seconds.
	maxLag time.Duration
	// silentKept counts the janitor's finds of an RTSP session silent
	// past SessionTimeout kept for PauseTimeout because its player's TCP
	// holds its stream back (tests).
	silentKept                atomic.Int64
	rtspQueue, rtspSendBuffer int
	// httpSendBuffer, when set (tests, before Start), is each HTTP
	// connection's socket send buffer (SO_SNDBUF), bytes (zero: the
	// kernel's autotuning), so that a download stalls on a player that
	// stopped reading within a test's seconds.
	httpSendBuffer int
	// abortHook, when set (tests, before Start), runs in finishSession
	// once a session the node aborts has left its sessions, before its
	// stream's Abort.
	abortHook func()
	// streamEndHook, when set (tests, before Start), runs in onStreamEnd
	// before it handles a stream's end by itself.
	streamEndHook func()
	// commandHook, when set (tests, before Start), runs on the manager
	// link's receiver in place of carrying out each command it receives:
	// ctx is the command's heartbeat stream's, and carryOut carries it out.
	commandHook func(ctx context.Context, cmd *pb.NodeCommand, carryOut func())
	// ends: the sessions ended whose end is not reported yet (an aborted
	// session's stream still writing: finishSession); Close waits for them.
	ends pendingEnds

	// udpRefused counts the SETUPs that offered only UDP answered 461 on
	// a node with TCPOnly (vodnode_setups_udp_refused_total).
	udpRefused atomic.Int64

	mu           sync.Mutex
	sessions     map[string]*session   // by RTSP session id
	udpPeers     map[udpKey]*session   // by client address (RTP and RTCP ports)
	used         map[string]spentToken // admission sessions that ended here, until their token expires
	usedDirty    bool                  // used changed since usedTokensFile was written
	live         map[string]any        // admission session id -> its live *session or *httpSession
	conns        map[*rtspConn]struct{}
	httpSessions map[string]*httpSession // by admission session id
	esTracks     map[string]esProbe      // probed elementary streams, by title (of the copy probed)
	reserved     int64                   // bit/s of the sessions' titles
	httpBursts   *burstPool              // the HTTP viewers' bursts, within the egress not reserved (nil: no egress capacity); its spare follows reserved
	slots        int                     // sessions, counting those being set up
	closed       bool
}

// Stats is a snapshot of a node's counters, for tests and tools.
type Stats struct {
	Sessions       int            // sessions now
	FillsStarted   map[string]int // fills started since Start, per title
	FillsCompleted map[string]int // fills completed (the title stored whole) since Start, per title
	FillsFailed    map[string]int // fills that failed since Start, per cause (store.FailCause: origin, preempted, ...)
	OriginBytes    int64          // bytes received from the origin
	// OriginRangeBytes: bytes received from the origin for what viewers
	// ask for far ahead of their title's fill (store.OriginRange): HTTP
	// ranges, sent on, not cached; RTSP plays, written into the title's
	// file ahead of the fill (store.Title.WriteAhead). Not in OriginBytes.
	OriginRangeBytes int64
	BytesSent        int64 // bytes sent to clients (RTP/RTCP and interleaving headers included)
}

// Start validates the configuration, opens the store (indexing the stored
// titles), binds the RTSP, UDP (and HTTP) ports and starts serving and, with
// a ManagerAddr, reporting. It is all-or-nothing: on error everything
// started is stopped again. Errors: ID or DataDir missing, a Secret shorter
// than 16 bytes, an unknown Evictor, a store that cannot be opened (a
// stored file that is not MPEG-TS, a DataDir another node process holds),
// a port that cannot be bound.
func (n *Node) Start() (err error) {
	if n.ID == "" || n.DataDir == "" {
		return errors.New("vodnode: ID and DataDir are required")
	}
	if n.RTSPListen == "" {
		n.RTSPListen = "127.0.0.1:0"
	}
	if n.Weight <= 0 {
		n.Weight = 100
	}
	if n.HeartbeatInterval <= 0 {
		n.HeartbeatInterval = time.Second
	}
	if n.SessionTimeout <= 0 {
		n.SessionTimeout = 60 * time.Second
	}
	if n.PauseTimeout <= 0 {
		n.PauseTimeout = DefaultPauseTimeout
	}
	n.PauseTimeout = max(n.PauseTimeout, n.SessionTimeout)
	if n.Evictor == "" {
		n.Evictor = "lru"
	}
	if n.Logger == nil {
		n.Logger = slog.Default()
	}
	n.log = n.Logger.With("node", n.ID)
	n.startedAt = time.Now()
	if n.signer, err = token.NewSigner(n.Secret); err != nil {
		return fmt.Errorf("vodnode: %w", err)
	}
	ev, err := smm.NewEvictor(n.Evictor)
	if err != nil {
		return fmt.Errorf("vodnode: %w", err)
	}
	n.sessions = map[string]*session{}
	n.udpPeers = map[udpKey]*session{}
	n.used = map[string]spentToken{}
	n.live = map[string]any{}
	n.conns = map[*rtspConn]struct{}{}
	n.httpSessions = map[string]*httpSession{}
	n.httpBursts = newBurstPool(n.Capacity.EgressBps)
	n.esTracks = map[string]esProbe{}
	n.ctx, n.cancel = context.WithCancel(context.Background())

	var undo []func()
	defer func() {
		if err != nil {
			n.cancel()
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
			n.wg.Wait()
		}
	}()

	var originClient pb.OriginClient
	if n.OriginAddr != "" {
		n.origin, err = grpc.NewClient(n.OriginAddr, grpc.WithTransportCredentials(orPlaintext(n.OriginCreds)),
			grpc.WithPerRPCCredentials(token.Bearer(token.OriginCredential(n.Secret))),
			grpc.WithConnectParams(pb.ConnectParams), grpc.WithKeepaliveParams(pb.Keepalive))
		if err != nil {
			return fmt.Errorf("vodnode: origin %s: %w", n.OriginAddr, err)
		}
		undo = append(undo, func() { n.origin.Close() })
		originClient = pb.NewOriginClient(n.origin)
	}
	n.fillEnded = make(chan struct{}, 1)
	n.store, err = store.Open(store.Config{
		Dir: filepath.Join(n.DataDir, "titles"), DiskBytes: n.Capacity.DiskBytes, Evictor: ev,
		Origin: originClient, Logger: n.log, RetryFor: n.FillRetryFor,
		FillEnded: func(string) {
			select {
			case n.fillEnded <- struct{}{}: // the next load report goes now
			default: // one is due already
			}
		},
	})
	if errors.Is(err, store.ErrLocked) {
		return fmt.Errorf("vodnode: data_dir %s is in use by another node process: %w", n.DataDir, err)
	}
	if err != nil {
		return fmt.Errorf("vodnode: %w", err)
	}
	undo = append(undo, func() { n.store.Close() })
	n.loadUsedTokens(time.Now()) // the data dir is this process's now

	if n.MaxConnsPerAddr == 0 {
		n.MaxConnsPerAddr = DefaultMaxConnsPerAddr
	}
	n.connLimit = connlimit.New(connlimit.Config{Max: n.MaxConnsPerAddr, Setting: "max_conns_per_addr", Log: n.log, Refused: n.connsRefused.add})
	undo = append(undo, n.connLimit.CloseAnswers) // run after the listeners' closes: undo runs backwards
	n.rtspLn, err = net.Listen("tcp", n.RTSPListen)
	if err != nil {
		return fmt.Errorf("vodnode: rtsp listen: %w", err)
	}
	n.rtspLn = n.connLimit.Wrap(n.rtspLn, "rtsp", connlimit.RTSP)
	undo = append(undo, func() { n.rtspLn.Close() })
	if (n.RTSPSListen == "") != (n.RTSPTLS == nil) {
		return errors.New("vodnode: RTSPS needs both a listen address and a TLS configuration")
	}
	if n.RTSPTLS != nil {
		ln, err := net.Listen("tcp", n.RTSPSListen)
		if err != nil {
			return fmt.Errorf("vodnode: rtsps listen: %w", err)
		}
		n.rtspsLn = tls.NewListener(n.connLimit.Wrap(ln, "rtsps", connlimit.Close), n.RTSPTLS)
		undo = append(undo, func() { n.rtspsLn.Close() })
	}
	if !n.TCPOnly {
		host, _, _ := net.SplitHostPort(n.rtspLn.Addr().String())
		n.udp, err = deliver.ListenUDP(host, n.RTPPort)
		if err != nil {
			return fmt.Errorf("vodnode: %w", err)
		}
		undo = append(undo, func() { n.udp.Close() })
	}
	n.ahead.max = n.OriginRanges
	if n.ahead.max == 0 {
		n.ahead.max = DefaultOriginRanges
	}
	n.engine = &deliver.Engine{Shards: n.Pacers, Tick: n.Tick, UDP: n.udp, Logger: n.log, MaxLag: n.maxLag}
	if err = n.engine.Start(); err != nil {
		return fmt.Errorf("vodnode: %w", err)
	}
	undo = append(undo, func() { n.engine.Close() })
	if n.HTTPListen != "" {
		n.httpSrv = &httpServer{n: n}
		if err = n.httpSrv.start(n.HTTPListen); err != nil {
			return fmt.Errorf("vodnode: http: %w", err)
		}
		undo = append(undo, func() { n.httpSrv.close() })
	}
	if err = n.startMetrics(); err != nil {
		return fmt.Errorf("vodnode: metrics: %w", err)
	}
	if n.metrics != nil {
		undo = append(undo, func() { n.metrics.Close() })
	}
	if n.ManagerAddr != "" {
		n.mgr, err = newManagerLink(n)
		if err != nil {
			return fmt.Errorf("vodnode: manager %s: %w", n.ManagerAddr, err)
		}
		undo = append(undo, func() { n.mgr.close() })
	}

	n.wg.Add(2)
	go n.acceptRTSP(n.rtspLn)
	if n.rtspsLn != nil {
		n.wg.Add(1)
		go n.acceptRTSP(n.rtspsLn)
	}
	var rtp, rtcp int // 0: none (tcp_only)
	if n.udp != nil {
		n.wg.Add(2)
		go n.readUDP(n.udp.RTP)
		go n.readUDP(n.udp.RTCP)
		rtp, rtcp = n.udp.Ports()
	}
	go n.janitor()
	if n.mgr != nil {
		n.mgr.start()
	}
	n.log.Info("node started", "rtsp", n.RTSPAddr(), "rtsps", n.RTSPSAddr(), "http", n.HTTPAddr(), "rtp_port", rtp, "rtcp_port", rtcp,
		"tcp_only", n.TCPOnly, "titles", len(n.store.Titles()))
	return nil
}

// shutdownEndsWait bounds how long Close waits for the ends of sessions
// aborted before it to be reported (pendingEnds): their writes fail at
// once once the connections are closed.
const shutdownEndsWait = 5 * time.Second

// Close stops the node: ends every session (reported to the manager as
// "shutdown"), stops the fills, closes the ports and the manager link.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed || n.sessions == nil {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	conns := make([]*rtspConn, 0, len(n.conns))
	for c := range n.conns {
		conns = append(conns, c)
	}
	sessions := make([]*session, 0, len(n.sessions))
	for _, s := range n.sessions {
		sessions = append(sessions, s)
	}
	var hss []*httpSession
	for _, hs := range n.httpSessions {
		hss = append(hss, hs)
	}
	n.mu.Unlock()

	if n.mgr != nil {
		// First out of service at the manager, so that no viewer is sent
		// here while the node stops.
		n.mgr.leave(2 * time.Second)
	}
	n.rtspLn.Close()
	if n.rtspsLn != nil {
		n.rtspsLn.Close()
	}
	if n.httpSrv != nil {
		n.httpSrv.close()
	}
	n.connLimit.CloseAnswers() // the listeners are closed: no refusal is answered past Close
	if n.metrics != nil {
		n.metrics.Close()
	}
	for _, s := range sessions {
		n.endSession(s, "shutdown", nil)
	}
	for _, hs := range hss {
		n.endHTTPSession(hs, "shutdown")
	}
	for _, c := range conns {
		deliver.CloseNow(c.nc) // a stalled RTSPS viewer does not hold the stop
	}
	// The ends of sessions aborted before (their stream's last writes,
	// failed now that the connections are closed) are reported before
	// the manager link closes, and its queued events are sent.
	if !n.ends.wait(shutdownEndsWait) {
		n.log.Warn("ends of aborted sessions not reported before shutdown", "waited", shutdownEndsWait)
	}
	if n.mgr != nil {
		n.mgr.close()
	}
	n.cancel()
	if n.udp != nil {
		n.udp.Close()
	}
	n.wg.Wait()
	n.saveUsedTokens(time.Now(), true) // the sessions ended above spent theirs
	n.engine.Close()
	n.store.Close()
	if n.origin != nil {
		n.origin.Close()
	}
	return nil
}

// RTSPAddr returns the RTSP listener's address (host:port); valid after
// Start.
func (n *Node) RTSPAddr() string { return n.rtspLn.Addr().String() }

// RTSPSAddr returns the RTSPS listener's address (host:port), "" without
// RTSPS; valid after Start.
func (n *Node) RTSPSAddr() string {
	if n.rtspsLn == nil {
		return ""
	}
	return n.rtspsLn.Addr().String()
}

// HTTPAddr returns the HTTP listener's address, "" without HTTP.
func (n *Node) HTTPAddr() string {
	if n.httpSrv == nil {
		return ""
	}
	return n.httpSrv.addr()
}

// advertised returns addr with its host replaced by AdvertiseHost.
func (n *Node) advertised(addr string) string {
	if addr == "" || n.AdvertiseHost == "" {
		return addr
	}
	_, port, _ := net.SplitHostPort(addr)
	return net.JoinHostPort(n.AdvertiseHost, port)
}

// Stats returns the node's counters.
func (n *Node) Stats() Stats {
	n.mu.Lock()
	ns := len(n.sessions)
	for _, hs := range n.httpSessions {
		if hs.t() != nil {
			ns++
		}
	}
	n.mu.Unlock()
	return Stats{
		Sessions:         ns,
		FillsStarted:     n.store.Fills(),
		FillsCompleted:   n.store.FillsCompleted(),
		FillsFailed:      n.store.FillsFailed(),
		OriginBytes:      n.store.OriginBytes(),
		OriginRangeBytes: n.store.OriginRangeBytes(),
		BytesSent:        n.bytesSent(),
	}
}

// bytesSent returns the bytes sent to clients over RTP, RTCP and HTTP.
func (n *Node) bytesSent() int64 {
	return n.engine.BytesSent() + n.httpBytes.Load()
}

// Titles returns the titles on the node's disk (complete or filling).
func (n *Node) Titles() []store.Status { return n.store.Titles() }

// Partials returns the partly filled titles the node keeps to resume their
// fills from (fills cut short), by title id; they are not in Titles.
func (n *Node) Partials() []store.Partial { return n.store.Partials() }

// SetDraining stops (true) or resumes (false) accepting new sessions;
// sessions in progress go on.
func (n *Node) SetDraining(v bool) { n.draining.Store(v) }

func portOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	v, _ := strconv.Atoi(p)
	return v
}

// orPlaintext returns c, or plaintext credentials when c is nil.
func orPlaintext(c credentials.TransportCredentials) credentials.TransportCredentials {
	if c == nil {
		return insecure.NewCredentials()
	}
	return c
}
