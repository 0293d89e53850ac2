package acm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"vodcluster/acm/auth"
	"vodcluster/acm/store"
	"vodcluster/lsm"
	"vodcluster/proto/grpctls"
	"vodcluster/proto/token"
	pb "vodcluster/proto/vodcluster/v1"
)

// The manager's start and stop: Start binds and starts everything, or
// nothing; Close (teardown) stops it again in order.

// Start validates the config, opens the store, loads the catalog and the
// session table from it, binds the three listeners and starts serving.
// It is all or nothing: on error, everything it started is stopped
// again. Errors: a negative duration or OriginChannels, a missing BOSS or DataDir, a BOSS whose Realm() differs
// from Realm, a Secret under 16 bytes, an unknown scheduling or storage
// policy or planner, a Replicator parameter out of range, a store that
// does not open or holds malformed pins, a listen address that cannot be
// bound.
func (m *Manager) Start() (err error) {
	if err := m.defaults(); err != nil {
		return err
	}
	if m.signer, err = token.NewSigner(m.Secret); err != nil {
		return fmt.Errorf("acm: secret: %w", err)
	}
	m.nonces = auth.NewNonces(m.Secret, 0)
	m.replays = auth.NewReplays(m.nonces.TTL(), 0)
	m.refusalLog = rate.NewLimiter(1, 10)
	if m.sites, err = newSiteTable(m.Sites); err != nil {
		return fmt.Errorf("acm: sites: %w", err)
	}
	if m.sched, err = lsm.New(m.Scheduler); err != nil {
		return fmt.Errorf("acm: %w", err)
	}
	m.Scheduler = m.sched.Config
	m.configuredPolicy = m.sched.Policy().Name()
	if err := m.newStorage(); err != nil {
		return err
	}
	m.seeded = map[string]float64{}
	m.sessions = map[string]*session{}
	m.userSessions = map[string]int{}
	m.userPending = map[string]int{}
	m.nodes = map[string]*nodeState{}
	m.forgotEnded = map[string][]string{}
	m.nodeSettings = map[string]nodeSetting{}
	m.knownTransports = map[string]storedTransport{}
	m.waiters = map[*lsm.Ticket]chan struct{}{}
	m.kick = make(chan struct{}, 1)
	m.catalogKick = make(chan struct{}, 1)
	m.healthKick = make(chan struct{}, 1)
	m.initPersist()
	m.planKick = make(chan struct{}, 1)
	m.planSoon = make(chan struct{}, 1)
	m.popSave = make(chan struct{}, 1)
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.startedAt = time.Now()
	m.setCatalog(nil)

	defer func() {
		if err != nil {
			m.teardown()
		}
	}()
	if m.st = m.Store; m.st == nil {
		b, err := store.OpenBadger(m.DataDir, m.log)
		if err != nil {
			return fmt.Errorf("acm: %w", err)
		}
		m.st, m.ownStore = b, true
	}
	if err := m.restore(); err != nil {
		return err
	}
	if err := m.restoreStorage(); err != nil {
		return err
	}
	m.armPlanWait(m.now())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err = m.loadOpState(ctx, false)
	if err == nil {
		err = m.loadTransports(ctx)
	}
	cancel()
	if err != nil {
		return err
	}
	if err := m.startLeader(); err != nil {
		return err
	}
	m.mu.Lock()
	restored := len(m.sessions)
	m.mu.Unlock()
	if restored > 0 && m.Leader() { // a standby leaves them (startLeader)
		m.log.Info("session table restored", "sessions", restored, "titles", len(m.titles()))
	}
	if m.OriginAddr != "" {
		creds := m.OriginCreds
		if creds == nil {
			creds = insecure.NewCredentials()
		}
		if m.origin, err = grpc.NewClient(m.OriginAddr, grpc.WithTransportCredentials(creds),
			grpc.WithPerRPCCredentials(token.Bearer(token.OriginCredential(m.Secret))),
			grpc.WithConnectParams(pb.ConnectParams), grpc.WithKeepaliveParams(pb.Keepalive)); err != nil {
			return fmt.Errorf("acm: origin %s: %w", m.OriginAddr, err)
		}
	}
	if err := m.listen(); err != nil {
		return err
	}
	if err := m.startMetrics(); err != nil {
		return fmt.Errorf("acm: metrics: %w", err)
	}
	if m.SessionRecordsFile != "" {
		if m.records, err = openSessionRecords(m.SessionRecordsFile, m.log); err != nil {
			return fmt.Errorf("acm: %w", err)
		}
	}

	// Everything that can fail has succeeded: start serving.
	if m.origin != nil {
		// One attempt now so that a reachable origin's catalog is there
		// when Start returns; the loop retries in the background.
		if err := m.refreshCatalog(m.ctx, 3*time.Second); err != nil {
			msg := "catalog: origin unavailable, serving the stored catalog"
			if m.noCatalog() { // it said "serving the stored catalog" of a store holding none
				msg = "catalog: origin unavailable and no catalog stored: title requests are refused (503, /healthz not ready) until the origin answers"
			}
			m.log.Warn(msg, withOriginHint(err, "origin", m.OriginAddr, "err", err)...)
		}
	}
	m.rtsp = &rtspServer{m: m, conns: map[net.Conn]struct{}{}}
	m.httpSrv = &http.Server{Handler: m.httpHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return m.ctx }}
	m.nodeCredential = token.NodeCredential(m.Secret)
	if m.AdminToken == "" && !grpctls.Loopback(m.GRPCAddr()) {
		m.log.Warn("the Admin API is open to anyone who reaches the gRPC port: set an admin token", "grpc", m.GRPCAddr())
	}
	srvOpts := append(m.grpcAuth(), grpc.ChainUnaryInterceptor(m.registerHook), grpc.KeepaliveEnforcementPolicy(pb.KeepaliveEnforcement))
	if m.GRPCCreds != nil {
		srvOpts = append(srvOpts, grpc.Creds(m.GRPCCreds))
	}
	m.grpcSrv = grpc.NewServer(srvOpts...)
	pb.RegisterNodeControlServer(m.grpcSrv, &nodeControl{m: m})
	pb.RegisterAdminServer(m.grpcSrv, &admin{m: m})
	m.goRun(func() { m.rtsp.serve(m.rtspLn) })
	if m.rtspsLn != nil {
		m.goRun(func() { m.rtsp.serve(m.rtspsLn) })
	}
	m.goRun(func() {
		if err := m.httpSrv.Serve(m.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("http front door stopped", "err", err)
		}
	})
	m.goRun(func() {
		if err := m.grpcSrv.Serve(m.grpcLn); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			m.log.Error("grpc server stopped", "err", err)
		}
	})
	m.goRun(m.pumpLoop)
	m.goRun(m.reportWriter)
	m.goRun(m.tickLoop)
	m.goRun(m.planLoop)
	m.goRun(m.progressLoop)
	m.goRun(m.runLeader)
	m.goRun(m.healthLoop)
	if m.origin != nil {
		// The origin's first check before Start returns (at most
		// originStartCheck): no prefetch is ordered before one passes.
		failed := m.checkOrigin(healthpb.NewHealthClient(m.origin), 0, min(max(m.OriginCheck, 100*time.Millisecond), originStartCheck))
		m.goRun(m.catalogLoop)
		m.goRun(func() { m.originLoop(failed) })
	}
	if w, ok := m.BOSS.(interface{ Watch(context.Context) }); ok {
		m.goRun(func() { w.Watch(m.ctx) })
	}
	m.serving = true
	m.log.Info("manager started", "rtsp", m.RTSPAddr(), "rtsps", m.RTSPSAddr(), "http", m.HTTPAddr(), "grpc", m.GRPCAddr(),
		"policy", m.sched.Config.Policy, "storage", m.storage.Name, "planner", m.plannerName(), "leader", m.Leader())
	return nil
}

func (m *Manager) goRun(f func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
}

// Close stops the front doors and the gRPC services, ends waiting
// requests (503), waits for stored prefetch orders' removals, writes the
// sessions' progress and the popularity snapshot (the leader only), releases the planner lock, and closes the store it opened. Sessions, pins and popularity stay in the store for the next
// Start. Closing twice returns the first result.
func (m *Manager) Close() error {
	m.closeOnce.Do(func() { m.closeError = m.teardown() })
	return m.closeError
}

func (m *Manager) teardown() error {
	if m.cancel != nil {
		m.cancel()
	}
	if m.rtsp != nil {
		m.rtsp.close()
	} else {
		for _, ln := range []net.Listener{m.rtspLn, m.rtspsLn} {
			if ln != nil {
				ln.Close()
			}
		}
	}
	if m.httpSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if m.httpSrv.Shutdown(ctx) != nil {
			m.httpSrv.Close()
		}
		cancel()
	} else if m.httpLn != nil {
		m.httpLn.Close()
	}
	m.conns.CloseAnswers() // the listeners are closed: no refusal is answered past Close
	if m.grpcSrv != nil {
		// Stop, not GracefulStop: heartbeat streams never end by themselves.
		m.grpcSrv.Stop()
	} else if m.grpcLn != nil {
		m.grpcLn.Close()
	}
	if m.metrics != nil {
		m.metrics.Close()
	}
	m.wg.Wait()
	m.waitStoreCheck() // a /healthz probe's check of the store, if one is still in flight
	m.mu.Lock()
	m.flushHeldRecordsLocked(m.now(), true)
	m.dropPendingWritesLocked()
	m.mu.Unlock()
	m.orderWrites.Wait() // orders given up or dropped leave the store before it closes (none starts now: ctx done, checked under mu)
	m.records.close()
	var err error
	switch {
	case m.serving && m.Leader():
		by := time.Now().Add(stateWriteWait) // the three within one wait
		m.saveProgress(by)
		m.savePopularity(by)
		m.saveKnownLogins(by)
	case m.serving && m.lead != nil && m.lead.held.Load():
		// Active until its lease ran out during the stop (the store did
		// not answer its renewal): writing now could land over the state
		// of a manager that took the lock since.
		m.log.Warn("stopping: state not saved, the planner lock's lease ran out while the store did not answer: the sessions' progress, the popularity and the known logins learnt since their last saves are lost",
			"progress_save", m.ProgressSave, "popularity_save", m.PopularitySave)
	}
	m.releaseLeader()
	if m.origin != nil {
		m.origin.Close()
	}
	if m.ownStore && m.st != nil {
		err = m.st.Close()
	}
	return err
}
