package acm

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"vodcluster/acm/auth"
	"vodcluster/acm/boss"
	"vodcluster/acm/store"
	"vodcluster/lsm"
	"vodcluster/proto/connlimit"
	"vodcluster/proto/metricshttp"
	"vodcluster/proto/token"
	"vodcluster/smm"
)

// Manager is the manager process's front door and control plane. Fill the
// exported fields, call Start, and Close when done. The zero value of a
// field means its default.
type Manager struct {
	RTSPListen string // RTSP front door listen address, DefaultRTSPListen
	HTTPListen string // HTTP front door listen address, DefaultHTTPListen
	GRPCListen string // NodeControl and Admin gRPC listen address, DefaultGRPCListen
	// GRPCCreds are the transport credentials of the NodeControl and
	// Admin gRPC server (grpctls.Server: TLS); nil: plaintext.
	GRPCCreds credentials.TransportCredentials
	// MetricsListen is the address of the Prometheus /metrics endpoint
	// (metrics.go: sessions, nodes, queue, front-door outcomes, and the
	// Go runtime's); "" = none.
	MetricsListen string
	// OriginCreds are those of the connection to OriginAddr
	// (grpctls.Client); nil: plaintext.
	OriginCreds credentials.TransportCredentials

	// DataDir is the directory of the embedded badger store. Required
	// unless Store is set.
	DataDir string
	// Store, when set, is used instead of a badger store in DataDir; the
	// Manager does not close it. A Store several managers share (a
	// store.Locker: Redis) makes them active and standby: the one holding
	// the planner lock plans (Leader), a standby loads the sessions of the
	// nodes that register with it and takes over when the lock's holder
	// fails (leader.go).
	Store store.Store
	// LeaderTTL is the lease of the planner lock on a shared Store: a
	// standby takes over within about LeaderTTL of the holder's failure,
	// and at its next try of the lock (every LeaderTTL/3) when the holder
	// closes and gives the lock back. DefaultLeaderTTL; at least 30 ms.
	LeaderTTL time.Duration

	// OriginAddr is the host:port of the CDP's gRPC Origin service the
	// catalog is loaded from (at Start, then every CatalogRefresh; while
	// the origin is down the stored catalog is served). Empty: the stored
	// catalog only.
	OriginAddr     string
	CatalogRefresh time.Duration // DefaultCatalogRefresh
	// OriginCheck is how often the origin's health is checked,
	// DefaultOriginCheck. While it is unavailable (two failed checks in a
	// row), a request for a title no node in service holds or fills is
	// refused at once (503 with Retry-After) instead of sent to a node to
	// wait for a fill that cannot start.
	OriginCheck time.Duration

	// Secret is the cluster secret (at least 16 bytes): the HMAC key of
	// admission tokens, shared with the nodes, and of Digest nonces.
	Secret []byte
	Realm  string // authentication realm, DefaultRealm
	// AdminToken, when set, is the bearer token every Admin gRPC call must
	// carry (vodctl --token). Empty: the Admin API is open to whoever
	// reaches the gRPC port (fine on loopback; Start warns otherwise).
	// NodeControl calls always carry the node credential derived from
	// Secret (token.NodeCredential).
	AdminToken string
	// Sites are the operator's sites (points of presence) and the client
	// addresses each serves: a viewer whose address falls in a site's
	// prefixes (the longest match) is placed on that site's nodes
	// (registered with the site) while one can take it, then, unless
	// SiteOnly, on any node. An IPv4-mapped prefix (::ffff:a.b.c.d/n,
	// n >= 96) counts as its IPv4 prefix. A node registering with a site
	// none of Sites names is logged as a warning. Empty: no sites. Errors
	// at Start: a site without a name or prefixes, a name or prefix given
	// twice, an IPv4-mapped prefix wider than /96.
	Sites []Site
	// SiteOnly keeps viewers of a site on its nodes: refused (453 / 503)
	// rather than served from another site.
	SiteOnly bool
	// HTTPTLS, when set, makes the HTTP front door HTTPS (only) with this
	// configuration (grpctls.ServerConfig: a certificate reloaded when
	// renewed): browser players on https:// pages may not load http://
	// video. Nil: plain HTTP.
	HTTPTLS *tls.Config
	// RTSPSListen and RTSPTLS, both set, add an RTSPS front door (RTSP
	// over TLS, rtsps://) beside the plain RTSP one, with this
	// configuration (grpctls.ServerConfig): credentials, tokens and the
	// redirect travel encrypted, and its viewers are redirected to their
	// node's RTSPS address (RegisterRequest.rtsps_addr; rtsp:// to a node
	// without one, with a warning when it registers). "" or nil: none.
	RTSPSListen string
	RTSPTLS     *tls.Config
	// SessionRecordsFile, when set, is the file the manager appends one
	// JSON line to for every session that ends on it (user, title, node,
	// protocol, client, admitted/started/ended times, seconds played,
	// bytes sent, why it ended: records.go), for billing, royalty reports
	// and analytics; ReopenSessionRecords opens it again after a log
	// rotation. Empty: none.
	SessionRecordsFile string
	// SubscriberTokens, when set, lets a player present a subscriber
	// token (a JWT the operator's portal signs: auth.SubscriberTokens)
	// instead of a password: as the title URL's token query parameter
	// (RTSP and HTTP) or as "Authorization: Bearer". Nil: a Bearer header
	// is refused (401) and a token parameter ignored.
	SubscriberTokens *auth.SubscriberTokens
	// BOSS is subscriber authentication and entitlement; required. A
	// BOSS with a Watch(ctx) method (boss.WatchedFile) is watched for the
	// manager's lifetime: Start runs Watch, Close ends it.
	BOSS boss.BOSS

	// TokenTTL is how long a redirected client has to show up at its
	// node (the token's lifetime). A session not STARTED at its node
	// within TokenTTL+NoShowGrace is released.
	TokenTTL    time.Duration // DefaultTokenTTL
	NoShowGrace time.Duration // DefaultNoShowGrace
	// QueueDeadline is how long a request that finds no node with
	// headroom waits (first come first served) before 453 / 503.
	QueueDeadline time.Duration // DefaultQueueDeadline
	// MaxSessionsPerUser caps a subscriber's live sessions (admitted or
	// playing): every admitted request holds bandwidth until its client
	// shows up at the node or the no-show deadline passes, so without a cap
	// one subscriber's DESCRIBEs could hold the cluster's capacity. A
	// request over the cap is refused (RTSP 403, HTTP 429) before
	// admission, unless one of the subscriber's sessions is idle (HTTP, or RTSP paused): the
	// one idle longest is ended for it (supersede.go). 0 means
	// DefaultMaxSessionsPerUser; < 0 means no cap.
	MaxSessionsPerUser int
	// LoginFailures is how many failed logins a client IP may make for
	// one user name before its requests for that name are refused (RTSP
	// 503, HTTP 429, with Retry-After) without checking the credentials;
	// one more is allowed every LoginFailureRefill. One client IP (an
	// IPv6 client's /64) may fail ten times as often over all user names
	// (a guesser spraying passwords over many names), and one user name
	// as often over all client IPs but those where it logged in correctly
	// within 7 days (guesses at one account from many addresses). 0 means
	// DefaultLoginFailures; < 0 means no limit.
	LoginFailures      int
	LoginFailureRefill time.Duration // DefaultLoginFailureRefill
	// LoginFailuresPerUser is how many failed logins one user name may
	// make over all client IPs but those where it logged in correctly
	// within 7 days before it is refused at the others; one more is
	// allowed every LoginFailureRefill/10. 0 means ten times
	// LoginFailures; < 0 means no such limit (guesses at one account from
	// many addresses then meet only each address's limits, and nobody can
	// hold a subscriber's new addresses refused by guessing its name).
	LoginFailuresPerUser int
	// RequestsPerUser is how many front-door title requests (RTSP
	// DESCRIBE or SETUP, HTTP GET of a title) one subscriber may make at
	// once over RTSP and HTTP; one more is allowed every RequestRefill
	// (ratelimit.go). Beyond, a request is refused after authentication,
	// before admission (RTSP 503, HTTP 429, with Retry-After). Keepalives,
	// other methods, HEAD and failed logins are not counted. 0 means
	// DefaultRequestsPerUser; < 0 means no limit.
	RequestsPerUser int
	RequestRefill   time.Duration // DefaultRequestRefill
	// MaxConnsPerAddr caps the open front-door connections (RTSP, RTSPS
	// and HTTP together) of one client address (an IPv6 client's /64):
	// one more is answered 503 and closed at accept (proto/connlimit). 0 means
	// DefaultMaxConnsPerAddr; < 0 means no limit.
	MaxConnsPerAddr int
	// RestoreGrace is how long a session without a reservation waits for
	// its node before it ends: one loaded from the store at Start (or at a
	// takeover, or when its node registers), or one orphaned when its node
	// missed its heartbeats; the node registering or reporting again gives
	// it its reservation back.
	RestoreGrace time.Duration // DefaultRestoreGrace

	Scheduler lsm.Config // zero value: lsm.DefaultConfig(); otherwise used as is (start from DefaultConfig)

	// Evictor names the storage policy (smm.StoragePolicies, the eviction
	// policy of every node's disk), DefaultEvictor; the default gdsf comes
	// with the Replicator planner (smm.NewStorage).
	Evictor string
	// StoragePlanner is the storage policy's planner: smm.PlannerReplicate,
	// smm.PlannerNone, or "" for the policy's default.
	StoragePlanner string
	// Replicator tunes the Replicator (zero fields: smm's defaults).
	Replicator smm.ReplicatorConfig
	// Planner, when set, replaces the storage policy's planner (the
	// policy's evictors stay); nil: the storage policy's. A Replicator
	// computes its plans without the manager's lock (on a copy,
	// smm.PlanJob); another Planner plans under it, like Observe.
	Planner smm.Planner
	// PlanInterval is how often the planner plans; it also plans at once
	// when a prefetch ends, a pin changes or popularity hints arrive, one
	// heartbeat interval after a node registers, and when
	// Replicator.Shifted says demand moved (asked every ShiftCheck).
	PlanInterval time.Duration // DefaultPlanInterval
	ShiftCheck   time.Duration // DefaultShiftCheck
	// FirstPlanWait is how long, at most, the first plan after a start or
	// a takeover waits for the nodes the restored plan placed titles on to
	// register (a whole cluster restarting: nodes that boot slower than
	// the manager); then the plan runs at the next PlanInterval tick with
	// the nodes there are. DefaultFirstPlanWait (manager config
	// storage.first_plan_wait).
	FirstPlanWait time.Duration
	// OriginChannels is the origin's concurrent transfers (the CDP's
	// max_transfers): what the planner may count on, and, when set, a
	// limit on fills: a request that would need a fill while that many are
	// in progress waits in the admission queue for one to end
	// (lsm.Config.FillNeedsChannel). 0: DefaultOriginChannels for the
	// planner, and fills on demand not held back.
	OriginChannels int
	// PopularitySave is how often the popularity snapshot is written to
	// the store (and once more at Close), DefaultPopularitySave.
	PopularitySave time.Duration
	// ProgressSave is how often the progress of the sessions playing at
	// their nodes (when each was last heard of, the bytes last reported)
	// is written to the store, and once more at Close, DefaultProgressSave:
	// a manager that starts after this one ends a session whose node does
	// not come back when it was last heard of (progress.go). The error of
	// a session record's played_s after a crash of the manager is at most
	// this plus the nodes' heartbeat interval when the node stopped with
	// the manager; what a node played while no manager ran, before it
	// stopped too, is not counted.
	ProgressSave time.Duration
	// OrderTimeout: a prefetch ordered that its node neither shows in a
	// load report nor reports failed within OrderTimeout counts as
	// failed, DefaultOrderTimeout.
	OrderTimeout time.Duration
	// WithdrawnGrace is how long a node's copy of a title withdrawn at
	// the origin (gone from its catalog) is kept before it is evicted
	// (withdrawn.go): a title published again within it keeps its copies.
	// 0 means DefaultWithdrawnGrace; < 0 means never evicted for that.
	WithdrawnGrace time.Duration
	// HealthCheck is how often the store is read to tell /healthz whether
	// it answers (between the reads, the outcome of the manager's own
	// store operations counts, and /healthz reads a store that has not
	// answered within the last second itself, waiting at most 750 ms for
	// it), DefaultHealthCheck. A store taken as
	// unavailable is read sooner: at once, then again as StoreTimeout
	// says, and every downRecheck (500 ms) while it fails quickly (a
	// refused connection).
	HealthCheck time.Duration
	// StoreTimeout bounds each store call of a front-door request (the
	// write of its new session, the delete of each session it ends), each
	// health check's read and each delete retried after the store's
	// return, DefaultStoreTimeout. A request whose store does not answer
	// within it is refused (503 with Retry-After), and the store is taken
	// as unavailable at once: the next requests are refused without
	// waiting for it until it answers again. The health check reads it
	// at once then, and again each time a read times out, so that the
	// refusals (and /healthz's 503) end when the store answers, not up to
	// a HealthCheck later.
	StoreTimeout time.Duration

	Logger *slog.Logger // nil: slog.Default()

	// Run-time state, guarded by mu.
	mu    sync.Mutex
	sched *lsm.Scheduler
	// originDown is set while the origin fails its health checks or
	// refuses the manager's credential (originLoop).
	originDown atomic.Bool
	// originHeard is set by the first health check of the origin that
	// passes (originLoop): until then no prefetch is ordered
	// (originUnusable).
	originHeard atomic.Bool
	// originMissed is set while the origin's last health check failed
	// (checkOrigin): an outage's first seconds, before originDown, in
	// which no prefetch is ordered either (originUnusable).
	originMissed atomic.Bool
	metrics      *metricshttp.Server // MetricsListen's endpoint, or nil
	// configuredPolicy is the scheduling policy of the configuration
	// (before any stored operator's choice: storedPolicy).
	configuredPolicy string
	storage          *smm.Storage
	rep              *smm.Replicator // the planner when it is the Replicator, else nil; a plan computes on a copy of it (plan)
	pins             *smm.Pins
	planner          smm.Planner
	seeded           map[string]float64 // title -> popularity hint applied (requests/day)
	sessions         map[string]*session
	// popRestoredMs is when the popularity snapshot this manager restored
	// (at its start or a takeover) was taken, popSavedMs when it last saved
	// its own, Unix ms (0: none), for ListPopularity.
	popRestoredMs, popSavedMs atomic.Int64
	// popCopy is ListPopularity's copy of the Replicator's popularity,
	// read without mu, its buffers reused by the next call (popCopyMu,
	// taken before mu).
	popCopyMu sync.Mutex
	popCopy   *smm.PopularityCopy
	// userSessions counts each subscriber's live sessions (MaxSessionsPerUser).
	userSessions map[string]int
	// userPending counts each subscriber's requests between the session
	// limit's check and their session (or refusal): waiting in the queue.
	userPending map[string]int
	// pendingWrites: sessions whose store write or delete failed, made
	// when the store answers (health.go: retryLater).
	pendingWrites map[string]writeRetry
	// undone: the sessions whose admission was undone, by id, to when,
	// in that order (undoneOrder), for undoneKeep (undoLocked).
	undone      map[string]time.Time
	undoneOrder []string
	// noShows: the sessions this manager ended as no-shows, by id, to the
	// start of their no-show clock then (noShowFrom), for undoneKeep
	// (noShowLocked).
	noShows recentIDs
	// lostEnded: the sessions whose ENDED the manager answered NOT_FOUND
	// and logged (logLostEndedLocked), for lostEndedKeep.
	lostEnded recentIDs
	// endedHere: the sessions this manager ended (endLocked), for
	// lostEndedKeep: their node's later ENDED is no lost end.
	endedHere recentIDs

	reportWrites reportWrites    // the load reports' session writes, made off their goroutine (persistq.go)
	persistWait  time.Duration   // bounds a session's store call off the front door (persist; defaultPersistWait)
	logins       *loginGuard     // failed logins per client IP and user; nil: no limit
	requests     *requestLimiter // title requests per subscriber; nil: no limit
	nodes        map[string]*nodeState
	// forgotEnded: sessions ended because the operator forgot their node
	// (ForgetNode), or ended them (EndSessions) before their node
	// registered here, by node id, until a node registers under the id: a
	// node that was cut off, not dead, may still play them, and is told
	// to end them (nodeState.endedAway).
	forgotEnded map[string][]string
	waiters     map[*lsm.Ticket]chan struct{}

	catalog atomic.Pointer[map[string]store.Title]
	// catalogSorted is the same catalog in id order (Admin.ListTitles
	// pages over it), stored with catalog by setCatalog.
	catalogSorted atomic.Pointer[[]store.Title]
	// catalogGen counts the catalogs set (setCatalog): a copy of another
	// version than the catalog's is stale only once a catalog read after
	// the manager first saw it still disagrees (staleLocked).
	catalogGen atomic.Uint64
	// catalogKick asks catalogLoop for a read of the catalog now (a node
	// reported a copy of a version the catalog does not have).
	catalogKick chan struct{}
	// healthKick asks healthLoop for a read of the store now: a store
	// call just timed out (noteStall), and the store's return should end
	// the refusals at once, not at the next HealthCheck.
	healthKick chan struct{}
	catalogMu  sync.Mutex // one read of the origin's catalog at a time (readCatalog)
	// unknownPackages: the packages held by subscribers that no title is
	// in, as checkPackages last logged them ("" none; catalogMu).
	unknownPackages string
	// originRefused is the origin's catalog_refused at the last read of
	// its catalog: the error with which it refused its title directory's
	// last change ("" none; catalogMu).
	originRefused string
	health        health // readiness for /healthz (health.go)
	// planMu serialises plans (plan); the planner computes holding it,
	// not mu. Taken before mu.
	planMu sync.Mutex
	// planTitles is the catalog as the storage planner sees it, built
	// once per catalog (planTitlesOf) rather than at every plan (planMu).
	planTitles   map[string]smm.TitleInfo
	planTitlesOf *map[string]store.Title
	// firstPlan: what the first plan after a start or a takeover waits
	// for (planwait.go; planMu).
	firstPlan planWait
	// shownWait: firstPlan as ListFills shows it (showPlanWait).
	shownWait atomic.Pointer[planWait]
	// progressEmpty: the last write of the sessions' progress had none
	// (saveProgress writes no other empty one; mu).
	progressEmpty bool
	st            store.Store
	ownStore      bool
	signer        *token.Signer
	readmits      readmitted // re-admission tickets taken (authenticateReadmit)
	// nodeCredential is the bearer NodeControl callers must present.
	nodeCredential string
	nonces         *auth.Nonces
	records        *sessionRecords // nil without SessionRecordsFile
	// heldRecords: records of sessions the operator ended, waiting for
	// their nodes' ENDED (mu).
	heldRecords map[string]heldRecord
	// endedUnseen: sessions ended on the manager's order and recorded
	// before their viewer reached the node, until their tokens expire
	// (endOrderedLocked).
	endedUnseen map[string]endedUnseen
	// endedRefused: sessions whose ENDED was refused as UNAVAILABLE (its
	// node not registered here yet) -> when; the node retries it. Their
	// node's first report, which does not list them, holds their record
	// for the retry (session.awaitEnded). Pruned after endedRefusedKeep.
	endedRefused map[string]time.Time
	replays      *auth.Replays // Digest responses accepted within the nonce TTL
	sites        *siteTable    // Sites by prefix
	// refusalLog: refused subscriber tokens are logged at Info up to 1 a
	// second (bursts of 10), the rest at Debug.
	refusalLog *rate.Limiter
	// capRefusals collapses the log lines of capacity refusals at the
	// front door per reason (capacityNote).
	capRefusals refusalNotes
	log         *slog.Logger
	// startedAt is when this manager became active (Start, or taking the
	// planner lock as a standby): restored sessions whose node has not
	// registered end RestoreGrace after it.
	startedAt time.Time
	// tookOver: startedAt is when this manager took the planner lock as a
	// standby (takeOver), not its Start (mu).
	tookOver bool
	lead     *leader // the planner lock on a shared store; nil: always the leader

	ctx      context.Context
	cancel   context.CancelFunc
	kick     chan struct{}
	planKick chan struct{}
	planSoon chan struct{}
	popSave  chan struct{} // asks the plan loop to save the popularity snapshot now (kickPopularitySave)
	wg       sync.WaitGroup
	pinsMu   sync.Mutex // serialises pin changes and their writes to the store
	opMu     sync.Mutex // serialises the operator's node settings and eviction holds: their changes with their writes to the store, and their reloads
	// suspended: the operator's suspended subscribers (suspend.go), by
	// user; replaced whole (mu).
	suspended map[string]suspension
	suspStale atomic.Int32 // how a standby's last re-read of the stored suspensions went: suspFresh, suspUnanswered or suspMalformed (refreshSuspensions logs each change)
	// nodeSettings are the operator's SetNode changes by node id (mu),
	// persisted so that they outlive this manager.
	nodeSettings map[string]nodeSetting
	// unsavedPolicy, unsavedNodes (opMu): the scheduling policy and the
	// nodes' settings in force here that the store did not take (SetPolicy,
	// SetNode answered CHANGE_NOT_SAVED), saved at a retake of the planner
	// lock that no other manager held meanwhile (loadOpState), or after a
	// renewal of the lock once the store takes them (saveUnsavedOp).
	unsavedPolicy bool
	unsavedNodes  map[string]bool
	// storedSettings, storedSusp (opMu): the node settings and
	// suspensions as this manager last wrote or read them in the store
	// (noteStored), which restoreLostOpLocked puts back when the store
	// lost them.
	storedSettings map[string]nodeSetting
	storedSusp     map[string]suspension
	// knownTransports (mu): the transport and site each node registered
	// with, here or (stored) with a manager before (transports.go);
	// transportsMu serialises their writes to the store.
	knownTransports map[string]storedTransport
	transportsMu    sync.Mutex
	// restoring: the operator's stored prefetch orders loaded at Start or
	// takeover, by node, queued again at each node's next report
	// (prefetchstate.go; mu). handOrders: the operator's orders this
	// manager knows, whose stored entry goes once the node reports the
	// title complete (mu).
	restoring   map[string][]opOrder
	handOrders  map[[2]string]bool
	orderWrites sync.WaitGroup // removals of stored prefetch and eviction orders under way (orderDoneLocked, evictOrderDoneLocked)
	// evictOrders: the operator's evictions ordered while their node was
	// down, by node and title, carried out at its registration
	// (evictstate.go; mu).
	evictOrders map[string]map[string]bool
	serving     bool // Start succeeded: Close saves the popularity snapshot

	origin     *grpc.ClientConn
	rtspLn     net.Listener
	rtspsLn    net.Listener       // nil: no RTSPS front door
	conns      *connlimit.Limiter // the front door's connections per client address; nil: no limit
	rtsp       *rtspServer
	httpLn     net.Listener
	httpSrv    *http.Server
	grpcLn     net.Listener
	grpcSrv    *grpc.Server
	closeOnce  sync.Once
	closeError error

	// evictHook, set by tests before Start, sees every eviction as it is
	// ordered (mu held), before the command is queued, with its reason
	// (evictOperator, evictPlanner, ...).
	evictHook func(ns *nodeState, title, reason string)
}

// now is the manager's clock.
func (m *Manager) now() time.Time { return time.Now() }

// kickPump asks the pump loop to retry the queue (capacity may have freed).
func (m *Manager) kickPump() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}
