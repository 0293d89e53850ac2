package vodnode

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/proto/grpctls"
	"vodcluster/proto/monotime"
	"vodcluster/proto/token"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/vodnode/store"
)

// Backoff of the manager link: first retry delay and cap (jittered,
// exponential).
const (
	backoffMin = 200 * time.Millisecond
	backoffMax = 10 * time.Second
	eventQueue = 4096
)

// managerLink registers the node with the manager, streams its load
// reports, carries out the manager's commands and delivers session events.
type managerLink struct {
	n      *Node
	cc     *grpc.ClientConn
	client pb.NodeControlClient
	events chan *pb.SessionEvent

	ctx    context.Context
	cancel context.CancelFunc
	quit   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once

	// leaving is closed by leave: the heartbeat stream says goodbye (the
	// node shuts down) and the link does not register again; left is
	// closed once the manager has answered the goodbye.
	leaving   chan struct{}
	left      chan struct{}
	leaveOnce sync.Once
	streaming atomic.Bool // a heartbeat stream is up

	prefetches prefetchRuns // PrefetchCommands being started (evictStarted)

	lastBytes  int64
	lastAt     time.Time
	lastEgress int64 // bit/s, at the last measure (loadReportAt)
}

func newManagerLink(n *Node) (*managerLink, error) {
	cc, err := grpc.NewClient(n.ManagerAddr, grpc.WithTransportCredentials(orPlaintext(n.ManagerCreds)),
		grpc.WithConnectParams(pb.ConnectParams), grpc.WithKeepaliveParams(pb.Keepalive),
		grpc.WithPerRPCCredentials(token.Bearer(token.NodeCredential(n.Secret))))
	if err != nil {
		return nil, err
	}
	m := &managerLink{n: n, cc: cc, client: pb.NewNodeControlClient(cc),
		events: make(chan *pb.SessionEvent, eventQueue), quit: make(chan struct{}),
		leaving: make(chan struct{}), left: make(chan struct{})}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m, nil
}

func (m *managerLink) start() {
	m.wg.Add(2)
	go m.run()
	go m.sendEvents()
}

// close stops reporting; queued session events get up to 2 s to be sent.
func (m *managerLink) close() {
	m.once.Do(func() {
		m.cancel()
		close(m.quit)
		m.wg.Wait()
		m.cc.Close()
	})
}

// leave tells the manager the node is going (it ends the heartbeat
// stream cleanly, and the manager takes the node out of service at once
// instead of after its missed heartbeats) and waits up to timeout for the
// manager's answer. The link does not register again.
func (m *managerLink) leave(timeout time.Duration) {
	m.leaveOnce.Do(func() { close(m.leaving) })
	if !m.streaming.Load() {
		return // no manager to tell
	}
	select {
	case <-m.left:
	case <-time.After(timeout):
	}
}

// report queues a session event for the manager (dropped, with a log, when
// the queue is full).
func (m *managerLink) report(ev *pb.SessionEvent) {
	select {
	case m.events <- ev:
	default:
		m.n.log.Warn("session event queue full, event dropped", "sid", ev.GetSessionId(), "kind", ev.GetKind())
	}
}

// jitter returns a random duration in [d/2, d).
func jitter(d time.Duration) time.Duration {
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func (m *managerLink) sleep(d time.Duration) bool {
	select {
	case <-m.ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// run keeps the node registered and its heartbeat stream up, retrying with
// capped, jittered exponential backoff.
func (m *managerLink) run() {
	defer m.wg.Done()
	backoff := backoffMin
	for m.ctx.Err() == nil {
		select {
		case <-m.leaving:
			<-m.ctx.Done() // shutting down: no new registration
			return
		default:
		}
		began := time.Now()
		err := m.session()
		if m.ctx.Err() != nil {
			return
		}
		if time.Since(began) > backoffMax {
			backoff = backoffMin
		}
		switch status.Code(err) {
		case codes.Unauthenticated:
			m.n.log.Error("the manager refuses this node's credential: its secret_file must hold the manager's cluster secret; retrying",
				"manager", m.n.ManagerAddr, "err", err, "in", backoff)
		case codes.AlreadyExists:
			m.n.log.Error("the manager refuses this node's id: another node process with this id is live at another address; give this node its own id (retrying, in case the other moved)",
				"id", m.n.ID, "manager", m.n.ManagerAddr, "err", err, "in", backoff)
		case codes.InvalidArgument:
			m.logInvalid(err, backoff)
		default:
			if h := grpctls.Hint(err); h != "" {
				m.n.log.Error("manager link down, retrying", "manager", m.n.ManagerAddr, "err", err, "in", backoff,
					"hint", h+" (manager_tls, manager_tls_ca_file)")
			} else {
				m.n.log.Warn("manager link down, retrying", "manager", m.n.ManagerAddr, "err", err, "in", backoff)
			}
		}
		if !m.sleep(jitter(backoff)) {
			return
		}
		backoff = min(2*backoff, backoffMax)
	}
}

// session registers and runs one heartbeat stream until it fails.
func (m *managerLink) session() error {
	rctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
	res, err := m.client.Register(rctx, m.n.registerRequest())
	cancel()
	if err != nil {
		return &registerError{err: err}
	}
	// Drain is the manager's order: the manager this node registered with
	// sends it again (DrainCommand) when it wants the node drained, so a
	// drain ordered by a manager that is gone, or lifted while the node was
	// away, does not outlive the registration.
	m.n.SetDraining(false)
	// The manager judges the node dead after missing heartbeats of its
	// own interval: the node reports at least that often.
	interval := m.n.HeartbeatInterval
	if ms := res.GetHeartbeatIntervalMs(); ms > 0 && time.Duration(ms)*time.Millisecond < interval {
		interval = time.Duration(ms) * time.Millisecond
		m.n.log.Info("reporting at the manager's heartbeat interval", "interval", interval)
	}
	m.n.log.Info("registered with the manager", "manager", m.n.ManagerAddr)
	ctx, cancel := context.WithCancel(m.ctx)
	hb, err := m.client.Heartbeat(ctx)
	if err != nil {
		cancel()
		return err
	}
	m.streaming.Store(true)
	defer m.streaming.Store(false)
	recvErr := make(chan error, 1)
	recvDone := make(chan struct{})
	// The stream ends with its receiver: its context cancelled (Recv
	// returns), the command it may be carrying out finishes before session
	// returns. Otherwise a command of this stream (a drain, the pins)
	// could be carried out after the node registered again, undoing what
	// that registration reset (the drain flag above) or the next
	// manager's own command sent on the new stream.
	defer func() {
		cancel()
		<-recvDone
	}()
	go func() {
		defer close(recvDone)
		for {
			cmd, err := hb.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			if f := m.n.commandHook; f != nil {
				f(ctx, cmd, func() { m.command(cmd) }) // a test's hook
				continue
			}
			m.command(cmd)
		}
	}()
	t := time.NewTicker(interval)
	defer t.Stop()
	remeasure := true
	for {
		if err := hb.Send(m.loadReportAt(remeasure)); err != nil {
			return err
		}
		sent := time.Now()
		remeasure = true
		// soon is the report a fill's end asks for (fillEnded): the
		// manager counts the origin's channels in use and the replicas
		// filling from these reports, so it hears of the end now rather
		// than up to an interval later, when viewers may wait in its
		// queue for that channel. It goes half an interval after the
		// report before it at the earliest, and the next tick a whole
		// interval after it, so that reports stay at least half an
		// interval apart: the manager ends a session missing from two
		// reports in a row (its ENDED lost), and a session's ENDED has
		// that long to arrive. Its egress is the last measure's unless
		// an interval has passed since it.
		var soon <-chan time.Time
	wait:
		for {
			select {
			case <-m.ctx.Done():
				hb.CloseSend()
				return m.ctx.Err()
			case <-m.leaving:
				hb.CloseSend() // goodbye: the manager ends the stream
				select {
				case <-recvErr:
				case <-time.After(2 * time.Second):
				}
				close(m.left)
				<-m.ctx.Done()
				return m.ctx.Err()
			case err := <-recvErr:
				return err
			case <-m.n.fillEnded:
				if soon == nil {
					soon = time.After(max(interval/2-time.Since(sent), 0))
				}
			case <-soon:
				// The tick is put off an interval, so fills ending every
				// half interval would never let it come: the egress is
				// measured anew once an interval has passed since the
				// last measure (it stayed the last tick's for good).
				remeasure = time.Since(m.lastAt) >= interval
				t.Reset(interval)
				break wait
			case <-t.C:
				break wait
			}
		}
	}
}

// sendEvents delivers session events in order, retrying each with backoff
// while the manager is unreachable. Events that the manager rejects as
// malformed are dropped.
func (m *managerLink) sendEvents() {
	defer m.wg.Done()
	var deadline time.Time // set once closing: flush until then
	for {
		var ev *pb.SessionEvent
		if deadline.IsZero() {
			select {
			case ev = <-m.events:
			case <-m.quit:
				deadline = time.Now().Add(2 * time.Second)
				continue
			}
		} else {
			select {
			case ev = <-m.events:
			default:
				return
			}
		}
		backoff := backoffMin
		for {
			d := deadline
			if d.IsZero() {
				d = time.Now().Add(2 * time.Second)
			}
			ctx, cancel := context.WithDeadline(context.Background(), d)
			_, err := m.client.ReportSession(ctx, ev)
			cancel()
			if err == nil {
				break
			}
			if c := status.Code(err); c == codes.InvalidArgument || c == codes.NotFound || c == codes.FailedPrecondition {
				m.n.log.Log(context.Background(), rejectedEventLevel(ev, c), "session event rejected by the manager", "sid", ev.GetSessionId(), "kind", ev.GetKind(), "err", err)
				break
			}
			if !deadline.IsZero() && time.Now().After(deadline) {
				return
			}
			if deadline.IsZero() {
				select {
				case <-m.quit:
					deadline = time.Now().Add(2 * time.Second)
				case <-time.After(jitter(backoff)):
				}
			}
			backoff = min(2*backoff, backoffMax)
		}
	}
}

// registerRequest describes the node for Register (its first
// registration and every one after a manager restart or a broken link).
func (n *Node) registerRequest() *pb.RegisterRequest {
	return &pb.RegisterRequest{
		NodeId:    n.ID,
		RtspAddr:  n.advertised(n.RTSPAddr()),
		HttpAddr:  n.advertised(n.HTTPAddr()),
		HttpTls:   n.HTTPTLS != nil && n.HTTPAddr() != "",
		RtspsAddr: n.advertised(n.RTSPSAddr()),
		Site:      n.Site,
		Capacity: &pb.NodeCapacity{
			EgressBps: n.Capacity.EgressBps, MaxSessions: int32(n.Capacity.MaxSessions), DiskBytes: n.Capacity.DiskBytes,
		},
		Titles:   storedTitles(n.store.Titles()),
		Weight:   int32(n.Weight),
		Partials: partialTitles(n.store.Partials()),
		// Without an origin it cannot fill: the manager sends it only
		// viewers of the titles it holds, and no prefetch.
		NoOrigin: n.OriginAddr == "",
		// Sessions of its previous process it no longer plays ended by
		// then at the latest (a restart).
		StartedAtUnixMs: n.startedAt.UnixMilli(),
		// No SETUP that offers only UDP is sent to it.
		TcpOnly: n.TCPOnly,
		// The manager warns when its token_ttl outlives a paused session.
		PauseTimeoutMs: n.PauseTimeout.Milliseconds(),
	}
}

// partialTitles describes the store's partials (fills cut short, kept to
// resume) for the manager, which prefers their nodes for the titles' next
// fills.
func partialTitles(ps []store.Partial) []*pb.PartialTitle {
	out := make([]*pb.PartialTitle, 0, len(ps))
	for _, p := range ps {
		out = append(out, &pb.PartialTitle{
			TitleId: p.ID, SizeBytes: p.Size, StoredBytes: p.Stored, Version: p.Version, SinceUnixMs: p.Since.UnixMilli(),
		})
	}
	return out
}

func storedTitles(ts []store.Status) []*pb.StoredTitle {
	out := make([]*pb.StoredTitle, 0, len(ts))
	for _, t := range ts {
		st := &pb.StoredTitle{
			TitleId: t.ID, SizeBytes: t.Size, StoredBytes: t.Stored, Filling: t.Filling, Prefetch: t.Prefetch, Preemptible: t.Preemptible, OriginWait: t.OriginWait,
			Sessions: int32(t.Readers), LastAccessUnixMs: t.LastAccess.UnixMilli(), Version: t.Version,
			OriginRetries: int32(t.OriginRetries), OriginError: t.OriginError,
		}
		if !t.OriginRetryAt.IsZero() {
			st.OriginRetryAtUnixMs = t.OriginRetryAt.UnixMilli()
		}
		out = append(out, st)
	}
	return out
}

// loadReport measures the node now: sessions, egress over the interval
// since the last report, disk, titles, live admission sessions (and the
// idle, paused and finished ones among them, and the bytes each has sent
// so far) and fills.
func (m *managerLink) loadReport() *pb.LoadReport { return m.loadReportAt(true) }

// loadReportAt is loadReport; with remeasure false (a report sent between two
// ticks) it repeats the egress measured at the last tick, so that the
// egress is always measured over a whole interval.
func (m *managerLink) loadReportAt(remeasure bool) *pb.LoadReport {
	n := m.n
	now := time.Now()
	egress := m.lastEgress
	if remeasure {
		sent := n.bytesSent()
		egress = 0
		if !m.lastAt.IsZero() {
			if dt := now.Sub(m.lastAt).Seconds(); dt > 0 {
				egress = int64(float64(sent-m.lastBytes) * 8 / dt)
			}
		}
		m.lastBytes, m.lastAt, m.lastEgress = sent, now, egress
	}
	r := &pb.LoadReport{NodeId: n.ID, AtUnixMs: now.UnixMilli(), EgressBps: egress, ActiveFills: int32(n.store.ActiveFills()),
		DiskFault: n.store.DiskFault()}
	n.mu.Lock()
	for _, s := range n.sessions {
		r.Sessions++
		if !s.t().View().Complete {
			r.FillSessions++
		}
		r.SessionIds = append(r.SessionIds, s.sid)
		var sent int64 // none before an ES session's first PLAY
		if s.player != nil {
			sent = s.player.BytesSent()
		}
		r.SessionBytesSent = append(r.SessionBytesSent, uint64(max(sent, 0)))
		// Paused: by its client's PAUSE, or by a player that stopped
		// reading without one (mpv), its stream waiting for it
		// (deliver.Stream.ReaderStopped; the janitor keeps such a
		// session as a paused one).
		paused := s.paused.Load()
		if rs, ok := s.player.(interface{ ReaderStopped() bool }); ok && rs.ReaderStopped() {
			paused = true
		}
		// A session paused and left silent longer than a playing one may
		// stay: idle, as an HTTP one below.
		if last := monotime.Time(s.lastSeen.Load()); paused && now.Sub(last) > n.SessionTimeout {
			r.IdleSessions = append(r.IdleSessions, &pb.IdleSession{SessionId: s.sid, IdleSeconds: int64(now.Sub(last) / time.Second)})
		}
		// What the operator's listing shows of it (SessionInfo.state):
		// finished at the end of the title, or paused.
		switch {
		case s.atEnd.Load():
			r.FinishedSessions = append(r.FinishedSessions, s.sid)
		case paused:
			r.PausedSessions = append(r.PausedSessions, s.sid)
		}
	}
	for _, hs := range n.httpSessions {
		if hs.t() == nil {
			continue // being set up
		}
		r.Sessions++
		if !hs.t().View().Complete {
			r.FillSessions++
		}
		r.SessionIds = append(r.SessionIds, hs.sid)
		r.SessionBytesSent = append(r.SessionBytesSent, uint64(max(hs.bytes.Load(), 0)))
		// Idle: no request in progress and none for longer than an RTSP
		// session may stay silent. It lives on to PauseTimeout, unless
		// the manager ends it for another session of its subscriber.
		// Quiet: no request in progress, the last within the timeout.
		if last := monotime.Time(hs.lastSeen.Load()); hs.active.Load() == 0 {
			e := &pb.IdleSession{SessionId: hs.sid, IdleSeconds: int64(max(now.Sub(last), 0) / time.Second)}
			if now.Sub(last) > n.SessionTimeout {
				r.IdleSessions = append(r.IdleSessions, e)
			} else {
				r.QuietSessions = append(r.QuietSessions, e)
			}
		}
	}
	n.mu.Unlock()
	// Partials (fills that stopped short, kept to resume) are not copies:
	// not in the titles, and their bytes count as free, since the node
	// removes them before anything else when a fill needs room; but for
	// those of titles a viewer is on its way for, which it keeps until
	// that viewer's deadline (store.Room): they count as used meanwhile.
	used, partial, quota := n.store.Room()
	used -= partial
	r.DiskUsedBytes = used
	r.Titles = storedTitles(n.store.Titles())
	r.Partials = partialTitles(n.store.Partials())
	// Free: the quota's room, but no more than the file system holding
	// the titles (the store's directory, which may be a mount of its own
	// under data_dir) has once the fills in progress are written
	// (disk_bytes may exceed the disk, or other files fill it). -1 when
	// neither bounds it (no quota, statfs fails): the manager then counts
	// the budget alone, not a full disk.
	fsFree := int64(-1)
	if avail, ok := n.store.FSAvail(); ok {
		fsFree = avail + partial
		for _, t := range r.Titles {
			if t.GetFilling() {
				fsFree -= max(t.GetSizeBytes()-t.GetStoredBytes(), 0)
			}
		}
		fsFree = max(fsFree, 0)
	}
	switch {
	case quota > 0 && fsFree >= 0:
		r.DiskFreeBytes = min(max(quota-used, 0), fsFree)
	case quota > 0:
		r.DiskFreeBytes = max(quota-used, 0)
	case fsFree >= 0:
		r.DiskFreeBytes = fsFree
	default:
		r.DiskFreeBytes = -1
	}
	for _, f := range n.store.TakeFailures() {
		r.FailedFills = append(r.FailedFills, &pb.FillFailure{TitleId: f.Title, Reason: f.Reason, Prefetch: f.Prefetch, AtUnixMs: f.At.UnixMilli()})
	}
	return r
}

// rejectedEventLevel is the level at which a session event the manager
// rejected with code c is logged: debug for the ENDED of a session it no
// longer knows (NotFound: it ended the session itself, as for a node it
// took for dead, whose sessions' ENDEDs all come when the node resumes:
// a warning each said nothing to act on), warn otherwise.
func rejectedEventLevel(ev *pb.SessionEvent, c codes.Code) slog.Level {
	if c == codes.NotFound && ev.GetKind() == pb.SessionEvent_KIND_ENDED {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}
