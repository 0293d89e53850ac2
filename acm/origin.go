package acm

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"vodcluster/lsm"
	"vodcluster/proto/grpctls"
	pb "vodcluster/proto/vodcluster/v1"
)

// DefaultOriginCheck is how often the manager asks the origin's gRPC
// health service whether it serves (Manager.OriginCheck).
const DefaultOriginCheck = 2 * time.Second

// originDownAfter is how many checks in a row must fail before the origin
// counts as unavailable (one lost answer, or a manager busy for a few
// seconds with a burst of logins, is not an outage).
const originDownAfter = 3

// errOriginDown refuses a request for a title no node in service the
// viewer may use (one offering its protocol and, with SiteOnly, in its
// site: lsm.Scheduler.HoldersInServiceFor) holds or fills while the origin
// is unavailable: a fill could not start, and the viewer would wait at a
// node for bytes that do not come. RTSP 503, HTTP 503, both with
// Retry-After.
var errOriginDown = errors.New("origin unavailable and no node holds the title")

// originLoop checks the origin every OriginCheck (checkOrigin; the first,
// failed in a row before it, at Start) with the standard gRPC
// health protocol (grpc.health.v1, which the CDP serves) and with
// checkCredential, and keeps originDown: set after originDownAfter failed
// checks in a row (no answer, NOT_SERVING, or the credential refused),
// cleared by the first check that passes. An origin without the health
// service (UNIMPLEMENTED) answered: it counts as up. A check that passes
// after an outage, or while the manager has no catalog (noCatalog), has
// the catalog read at once (kickCatalog).
func (m *Manager) originLoop(failed int) {
	hc := healthpb.NewHealthClient(m.origin)
	t := time.NewTicker(m.OriginCheck)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
		failed = m.checkOrigin(hc, failed, max(m.OriginCheck, 100*time.Millisecond))
	}
}

// originStartCheck is how long Start waits for its check of the origin
// (checkOrigin): a black-holed origin delays the start by this much.
const originStartCheck = time.Second

// checkOrigin checks the origin once (see originLoop), within timeout,
// after failed checks in a row, and returns the failed checks in a row
// after it. Start runs the first (no prefetch is ordered before one
// passes: originHeard), originLoop the others.
func (m *Manager) checkOrigin(hc healthpb.HealthClient, failed int, timeout time.Duration) int {
	ctx, cancel := context.WithTimeout(m.ctx, timeout)
	res, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
	up := err == nil && res.GetStatus() == healthpb.HealthCheckResponse_SERVING || status.Code(err) == codes.Unimplemented
	if up {
		// The health service asks for no credential: an origin
		// refusing ours (another secret_file) served its health while
		// every fill and catalog read failed, and viewers were sent to
		// nodes for fills that could not start.
		if err = m.checkCredential(ctx); err != nil {
			up = false
		}
	}
	cancel()
	missed := m.originMissed.Swap(!up)
	switch {
	case up:
		if !m.originHeard.Swap(true) || missed {
			m.kickPlan() // prefetches may be ordered now
		}
		if m.originDown.Swap(false) {
			m.log.Info("origin available again: fills admitted", "origin", m.OriginAddr)
			m.queuedOriginDown(false)
			// The catalog loop backs off up to CatalogRefresh after
			// failed reads: a manager with no catalog stayed not ready,
			// refusing every title "the origin has not been reached",
			// for up to that long after the origin answered.
			m.kickCatalog()
		} else if m.noCatalog() {
			m.kickCatalog()
		}
		return 0
	case failed+1 < originDownAfter:
		return failed + 1
	}
	m.origin.ResetConnectBackoff() // try the origin again at the next check, not after a backoff
	if !m.originDown.Swap(true) {
		m.queuedOriginDown(true)
		msg := "origin unavailable: requests for titles no node holds are refused (503) until it answers"
		if res.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			msg = "origin serves but does not take the manager's origin call: requests for titles no node holds are refused (503) until it does"
		}
		m.log.Warn(msg, withOriginHint(err, "origin", m.OriginAddr, "health", res.GetStatus().String(), "err", err)...)
	}
	return failed + 1
}

// checkCredential asks the origin for a title without an id, a call that
// needs the origin credential (token.OriginCredential) and reads nothing:
// nil when the origin answered it past its credential check
// (INVALID_ARGUMENT, or NOT_FOUND or OK from an origin that takes an empty
// id, or UNIMPLEMENTED from one without GetTitle), else the call's error
// (UNAUTHENTICATED when the origin refuses the credential, UNAVAILABLE or
// DEADLINE_EXCEEDED when it does not answer).
func (m *Manager) checkCredential(ctx context.Context) error {
	_, err := pb.NewOriginClient(m.origin).GetTitle(ctx, &pb.GetTitleRequest{})
	switch status.Code(err) {
	case codes.OK, codes.InvalidArgument, codes.NotFound, codes.Unimplemented:
		return nil
	}
	return err
}

// queuedOriginDown applies the origin's change to the requests waiting in
// the admission queue (lsm.Scheduler.SetOriginDown): admitted while it was
// down, they were kept to the nodes holding the title and, back up, may
// now be placed with a fill (the queue is pumped at once); admitted while
// it was up, they now wait for a holder rather than be placed with a fill
// that cannot start.
func (m *Manager) queuedOriginDown(down bool) {
	m.mu.Lock()
	m.sched.SetOriginDown(down)
	m.mu.Unlock()
	if !down {
		m.kickPump()
	}
}

// withOriginHint returns the log attributes args, followed by a "hint"
// when err on the origin link comes from TLS or from the origin's refusal
// of the credential (grpctls.OriginHint).
func withOriginHint(err error, args ...any) []any {
	if h := grpctls.OriginHint(err); h != "" {
		args = append(args, "hint", h)
	}
	return args
}

// originUnusable says why no fill from the origin may be counted on now
// ("" when one may): the origin is unavailable (originDown), or, since the
// manager started, it has not passed a health check yet (originHeard: a
// manager started during an outage took it for up until originDownAfter
// checks had failed), or its last check failed (originMissed: an outage's
// first seconds, before originDownAfter checks failed, let a prefetch
// evict a title's only copy; a prefetch is deferred at no cost to a
// viewer, who is refused only once the origin counts as unavailable).
// Then no prefetch is ordered nor room made for one
// (a title's only copy was evicted for fills that could not start, and
// the operator's restored prefetches spent their retries), and no stale
// or withdrawn copy is evicted (it could not be fetched again). A manager
// without an origin to check never finds it unusable.
func (m *Manager) originUnusable() string {
	switch {
	case m.origin == nil:
		return ""
	case m.originDown.Load():
		return "the origin is unavailable"
	case !m.originHeard.Load():
		return "the origin has not answered since the manager started"
	case m.originMissed.Load():
		return "the origin did not pass its last health check"
	}
	return ""
}

// originDownLocked reports whether r, waiting in the queue, would now be
// refused at once with errOriginDown (mu held): the origin is unavailable
// and no node in service r could use holds or fills its title (a fill
// booked but not begun does not count: it cannot begin).
func (m *Manager) originDownLocked(r *lsm.Request) bool {
	if !m.originDown.Load() {
		return false
	}
	q := *r
	q.OriginDown = true
	return m.sched.HoldersInServiceFor(&q) == 0
}

// originDownRefusedLocked logs the refusal of r of user with
// errOriginDown at its queue deadline, now, asked at asked (its wait in
// the queue, when it waited, is logged), and returns errOriginDown (mu
// held, and released).
func (m *Manager) originDownRefusedLocked(r *lsm.Request, user string, asked, now time.Time) error {
	m.mu.Unlock()
	msg, attrs := "admission refused: ", []any{"title", r.Title, "user", user, "site", r.Site}
	if waited := now.Sub(asked); waited > 0 {
		msg, attrs = "admission refused while it waited: ", append(attrs, "waited", waited)
	}
	m.capRefusals.log(m.log, now, refusedOriginDown, slog.LevelInfo, msg+"origin unavailable and no node the viewer may use holds the title", attrs...)
	return errOriginDown
}
