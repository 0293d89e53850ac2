package cdp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"vodcluster/cdp/tsindex"
	"vodcluster/proto/durtext"
	"vodcluster/proto/grpctls"
	"vodcluster/proto/metricshttp"
	vodclusterv1 "vodcluster/proto/vodcluster/v1"
)

// DefaultListen is the address the origin's gRPC server listens on when
// Server.Listen is empty.
const DefaultListen = ":9100"

// DefaultChunkBytes is the size of a Fetch chunk when Server.ChunkBytes is
// 0: 348 MPEG-TS packets, 65424 bytes, the multiple of 188 closest to 64 KiB.
const DefaultChunkBytes = 348 * tsindex.PacketSize

// MaxChunkBytes is the largest Server.ChunkBytes accepted, bytes: well under
// the 4 MiB a gRPC client accepts per message by default.
const MaxChunkBytes = 1 << 20

// Server is the origin's gRPC server (service vodcluster.v1.Origin) over the
// catalog of one directory. Set the exported fields, then call Start; Close
// stops it. The zero value of every field but Dir is usable.
//
// The upstream link is modelled per transfer (one Fetch call): it waits for
// one of MaxTransfers channels (FIFO), pays SetupDelay once, says it
// started (a message with no data, FetchChunk.started, from which on a node
// bounds the transfer's silence), then sends its chunks paced to
// TransferRateBps by a token bucket (golang.org/x/time/rate) whose burst is
// one chunk.
type Server struct {
	// UnimplementedOriginServer answers UNIMPLEMENTED to Origin methods
	// added to the contract later (required by the generated code).
	vodclusterv1.UnimplementedOriginServer

	// Dir is the title directory, loaded like LoadCatalog at Start and
	// again when it changes (CatalogPoll, Reload).
	Dir string
	// Listen is the TCP address of the gRPC server, host:port; port 0 picks
	// a free one (see Addr). Empty means DefaultListen.
	Listen string
	// SetupDelay is paid once by every transfer after it got a channel and
	// before it says it started (FetchChunk.started) and sends its first
	// byte: like the queue before it, not counted as a stall by the node;
	// 0 means none.
	SetupDelay time.Duration
	// MaxTransfers is the number of concurrent transfers (channels); 0 means
	// unlimited.
	MaxTransfers int
	// TransferRateBps caps each transfer's rate, bit/s; 0 means unlimited.
	TransferRateBps int64
	// ChunkBytes is the data size of one FetchChunk, bytes: a multiple of
	// 188 up to MaxChunkBytes; 0 means DefaultChunkBytes. A transfer whose
	// TransferRateBps is under one chunk a second sends a second's worth
	// (whole packets) at a time.
	ChunkBytes int
	// Logger receives one line per transfer and the lifecycle; nil means
	// slog.Default().
	Logger *slog.Logger
	// Creds are the gRPC server's transport credentials (grpctls.Server:
	// TLS); nil means plaintext.
	Creds credentials.TransportCredentials
	// Credential is the bearer credential every Origin call must carry
	// (token.OriginCredential of the cluster secret, which the manager and
	// the nodes send); a call without it is UNAUTHENTICATED. The health
	// service stays open. "" means none is asked: anyone who reaches
	// Listen may list the catalog and fetch every title.
	Credential string
	// MetricsListen is the address of the Prometheus /metrics endpoint
	// (metrics.go); "" means none.
	MetricsListen string
	// CatalogPoll is how often the title directory is looked at for
	// changes (catalog.yaml, title files added, removed or replaced), which
	// are then loaded (Reload); 0 means DefaultCatalogPoll, a negative
	// value never (Reload only).
	CatalogPoll time.Duration

	clock clock // nil means the wall clock; tests put a fake here
	// statFile stats a title's file before its fetch queues, and for
	// GetTitle; nil: os.Stat (tests put one that hangs here).
	statFile func(string) (fs.FileInfo, error)
	// statWait bounds statFile's wait (statTitle); 0: StatTimeout (tests
	// put a shorter one here).
	statWait time.Duration

	mu      sync.Mutex
	started bool
	closed  bool
	catalog *Catalog
	lis     net.Listener
	grpc    *grpc.Server
	served  chan struct{}       // closed when Serve has returned
	metrics *metricshttp.Server // MetricsListen's endpoint, or nil

	// Set by Start, read-only afterwards.
	log   *slog.Logger
	clk   clock
	chunk int
	slots *semaphore.Weighted // nil when MaxTransfers is 0

	preemptMu sync.Mutex
	preempt   []*preemptEntry // the preemptible transfers holding a channel, oldest first (preemptMu)
	yielding  []*preemptEntry // the prefetches holding a channel, oldest first (preemptMu)
	queued    int             // fills (classFill) queued for a channel (preemptMu)
	fillLeft  chan struct{}   // closed when a fill leaves the queue, for the prefetches that gave way to it (preemptMu; nil: none waits)

	stats counters

	refusedLogged atomic.Int64 // when (monotime.Now) a call without the Credential was last logged

	reloadMu  sync.Mutex    // serialises loads of the catalog
	seen      dirState      // the directory as last loaded, or refused (reloadMu)
	watched   []string      // the title files the last load named (reloadMu)
	watchDone chan struct{} // closed by Close to stop the watch
	rescan    chan struct{} // wakes the watch to poll now (rescanSoon); made by Start, buffered 1
	afterLoad func()        // tests: called by each load once it has read the directory, before its state is kept

	checks      singleflight.Group // concurrent checkDirectory calls share one run
	checkSettle time.Duration      // tests: the settle interval of a check (0: settleInterval's default)
	named       namedCache         // the files catalog.yaml names, as stateNow last parsed it
	afterSettle func()             // tests: called by a check after each settle wait, before it looks again
	checkJoined func()             // tests: called by each check once it has started or joined a run
	checkRuns   atomic.Int64       // runs of checks (runCheck), for tests
}

var _ vodclusterv1.OriginServer = (*Server)(nil)

// Start checks the configuration, loads the catalog of Dir and starts
// serving on Listen. It does nothing on failure (all or nothing) and
// returns the configuration, catalog or listen error. A Server starts once.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("cdp: server already started")
	}
	if err := s.check(); err != nil {
		return err
	}
	cat, _, err := s.loadDir(nil)
	if err != nil {
		return err
	}
	listen := s.Listen
	if listen == "" {
		listen = DefaultListen
	}
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("cdp: %w", err)
	}
	if err := s.startMetrics(); err != nil {
		lis.Close()
		return fmt.Errorf("cdp: metrics: %w", err)
	}

	s.log = s.Logger
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("component", "cdp")
	s.clk = s.clock
	if s.clk == nil {
		s.clk = wallClock{}
	}
	s.chunk = s.ChunkBytes
	if s.chunk == 0 {
		s.chunk = DefaultChunkBytes
	}
	if s.MaxTransfers > 0 {
		s.slots = semaphore.NewWeighted(int64(s.MaxTransfers))
	}
	s.catalog = cat
	s.lis = lis
	opts := []grpc.ServerOption{grpc.WaitForHandlers(true), grpc.KeepaliveEnforcementPolicy(vodclusterv1.KeepaliveEnforcement)}
	if s.Creds != nil {
		opts = append(opts, grpc.Creds(s.Creds))
	}
	opts = append(opts, s.authOptions()...)
	s.grpc = grpc.NewServer(opts...)
	vodclusterv1.RegisterOriginServer(s.grpc, s)
	healthpb.RegisterHealthServer(s.grpc, health.NewServer())
	s.served = make(chan struct{})
	s.rescan = make(chan struct{}, 1)
	s.started = true

	if cat.Len() == 0 {
		s.log.Warn("catalog is empty", "dir", s.Dir)
	}
	if s.Credential == "" && !grpctls.Loopback(lis.Addr().String()) {
		s.log.Warn("the origin asks no credential: anyone who reaches it may list the catalog and fetch every title; give it the cluster's secret_file", "addr", lis.Addr().String())
	}
	s.log.Info("origin serving", "addr", lis.Addr().String(), "titles", cat.Len(),
		"setup_delay", s.SetupDelay, "max_transfers", s.MaxTransfers,
		"transfer_rate_bps", s.TransferRateBps, "chunk_bytes", s.chunk)
	go func() {
		defer close(s.served)
		if err := s.grpc.Serve(lis); err != nil {
			s.log.Error("origin gRPC server stopped", "err", err)
		}
	}()
	s.watchDone = make(chan struct{})
	if poll := cmp.Or(s.CatalogPoll, DefaultCatalogPoll); poll > 0 {
		go s.watch(poll, s.watchDone)
	}
	return nil
}

// Validate checks the configuration fields as Start does, without loading
// the catalog or listening: an empty Dir, a negative SetupDelay,
// MaxTransfers or TransferRateBps, or a ChunkBytes that is not a multiple
// of 188 up to MaxChunkBytes. Call it before Start, not concurrently with it.
func (s *Server) Validate() error { return s.check() }

func (s *Server) check() error {
	switch {
	case s.Dir == "":
		return errors.New("cdp: Dir is empty")
	case s.SetupDelay < 0:
		return fmt.Errorf("cdp: SetupDelay %s is negative", durtext.Written(s.SetupDelay))
	case s.MaxTransfers < 0:
		return fmt.Errorf("cdp: MaxTransfers %d is negative", s.MaxTransfers)
	case s.TransferRateBps < 0:
		return fmt.Errorf("cdp: TransferRateBps %d is negative", s.TransferRateBps)
	case s.ChunkBytes < 0 || s.ChunkBytes > MaxChunkBytes || s.ChunkBytes%tsindex.PacketSize != 0:
		return fmt.Errorf("cdp: ChunkBytes %d is not a multiple of %d between 0 and %d",
			s.ChunkBytes, tsindex.PacketSize, MaxChunkBytes)
	}
	return nil
}

// Close stops the server: it closes the listener and every connection,
// cancels the transfers in progress (which give their channels back) and
// waits for their handlers to return. Close before Start, or a second
// Close, does nothing. It returns nil.
func (s *Server) Close() error {
	s.mu.Lock()
	if !s.started || s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	srv, served := s.grpc, s.served
	close(s.watchDone)
	s.mu.Unlock()

	srv.Stop()
	<-served
	if s.metrics != nil {
		s.metrics.Close()
	}
	s.log.Info("origin stopped")
	return nil
}

// Addr returns the address the server listens on (host:port), or "" before
// Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lis == nil {
		return ""
	}
	return s.lis.Addr().String()
}

// Catalog returns the catalog in use (loaded by Start or the last Reload
// that loaded), or nil before Start.
func (s *Server) Catalog() *Catalog {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.catalog
}

// Stats returns a snapshot of the transfer counters.
func (s *Server) Stats() Stats { return s.stats.snapshot() }

// ListTitles returns the catalog sorted by id, whole or the page req asks
// for (Origin.ListTitles, vodclusterv1.TitlePage). With check_directory it
// first looks at the title directory and loads it when it changed and
// then held still (checkDirectory), answering directory_checked, and
// directory_changing when it kept changing (not loaded); every answer carries
// catalog_refused while the last load was refused (Stats.CatalogRefusal).
// It returns UNAVAILABLE when the server was not started, INVALID_ARGUMENT
// for a negative page_size, CANCELED or DEADLINE_EXCEEDED when ctx is done
// before the check is over.
func (s *Server) ListTitles(ctx context.Context, req *vodclusterv1.ListTitlesRequest) (*vodclusterv1.ListTitlesResponse, error) {
	if s.Catalog() == nil {
		return nil, errNotStarted
	}
	changing := false
	if req.GetCheckDirectory() {
		var err error
		if changing, err = s.checkDirectory(ctx); err != nil {
			return nil, err
		}
	}
	cat := s.Catalog()
	if cat == nil {
		return nil, errNotStarted
	}
	start, end, next, err := vodclusterv1.TitlePage(len(cat.titles), func(i int) string { return cat.titles[i].ID }, req)
	if err != nil {
		return nil, err
	}
	out := make([]*vodclusterv1.Title, 0, end-start)
	for _, t := range cat.titles[start:end] {
		out = append(out, t.Proto())
	}
	return &vodclusterv1.ListTitlesResponse{Titles: out, NextPageToken: next,
		DirectoryChecked: req.GetCheckDirectory(), DirectoryChanging: changing, CatalogRefused: s.stats.catalogRefusal()}, nil
}

// GetTitle returns title req.title_id as the catalog in use has it
// (Origin.GetTitle): nodes ask it before a fill, so that they fill the
// version the origin serves now, however old their copy of the catalog.
// It returns UNAVAILABLE when the server was not started, INVALID_ARGUMENT
// for an empty id, NOT_FOUND for a title not in the catalog or whose file
// is gone, UNAVAILABLE also while its file is not the one the catalog
// describes (written over or touched since: its version is known once the
// origin has read it again, which the answer has it do soon; a node then
// fills from the title it has cached, naming that version, and its
// fetches are answered UNAVAILABLE, retried, until then), and when the
// stat of its file does not return within StatTimeout (a failing disk, a
// hung network file system).
func (s *Server) GetTitle(ctx context.Context, req *vodclusterv1.GetTitleRequest) (*vodclusterv1.Title, error) {
	cat := s.Catalog()
	if cat == nil {
		return nil, errNotStarted
	}
	if req.GetTitleId() == "" {
		return nil, status.Error(codes.InvalidArgument, "title_id is empty")
	}
	t, ok := cat.Title(req.GetTitleId())
	if !ok {
		return nil, status.Errorf(codes.NotFound, "title %q is not in the origin's catalog", clipID(req.GetTitleId()))
	}
	st, statErr, err := s.statTitle(ctx, t, 0, "origin GetTitle's stat of its title's file")
	if err != nil {
		return nil, err
	}
	if err := s.rescanOn(t.checkFile(st, statErr)); err != nil {
		return nil, err
	}
	return t.Proto(), nil
}

// clipID returns a title id a caller sent, cut to 128 bytes (the longest
// valid id, ValidID) with its length after a cut, for an error message
// that must not echo a huge argument back whole.
func clipID(id string) string {
	if len(id) <= 128 {
		return id
	}
	return fmt.Sprintf("%s… (%d bytes)", id[:128], len(id))
}
