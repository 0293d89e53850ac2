package acm

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"vodcluster/lsm"
	"vodcluster/proto/durtext"
	"vodcluster/smm"
)

// Defaults of the Manager's config fields.
const (
	DefaultRTSPListen    = ":8554"
	DefaultRTSPSListen   = ":8322" // RTSPS front door, when it has a certificate
	DefaultHTTPListen    = ":8080"
	DefaultGRPCListen    = ":9090"
	DefaultRealm         = "vodcluster"
	DefaultTokenTTL      = 60 * time.Second
	DefaultNoShowGrace   = 10 * time.Second
	DefaultQueueDeadline = 5 * time.Second
	// DefaultMaxSessionsPerUser: a household's set-top boxes and players.
	DefaultMaxSessionsPerUser = 8
	DefaultCatalogRefresh     = time.Minute
	DefaultRestoreGrace       = 30 * time.Second
	DefaultPlanInterval       = 30 * time.Second
	// DefaultFirstPlanWait: a machine's boot after a power cut, with its
	// disks' checks.
	DefaultFirstPlanWait  = 3 * time.Minute
	DefaultOriginChannels = 4
	DefaultEvictor        = smm.DefaultEvictor
	DefaultShiftCheck     = time.Second
	DefaultPopularitySave = time.Minute
	// DefaultProgressSave: one store write of every playing session's
	// progress (some 100 bytes each) every 10 s.
	DefaultProgressSave = 10 * time.Second
	DefaultOrderTimeout = 30 * time.Second
	// DefaultStoreTimeout: a working store answers in milliseconds (a
	// Redis across a data center, a disk's sync); a set-top box waits a
	// few seconds for its answer before it retries or gives up.
	DefaultStoreTimeout = 2 * time.Second
	// DefaultMaxConnsPerAddr: the boxes of many households behind one
	// carrier-grade NAT address, each with a connection or two.
	DefaultMaxConnsPerAddr = 256
)

// defaults checks the config fields (checkNegatives, a BOSS and a store
// or DataDir, the BOSS's realm) and fills the zero ones with their
// defaults (the Default* constants), and builds the failed-login guard and
// the request limiter from them.
func (m *Manager) defaults() error {
	if err := m.checkNegatives(); err != nil {
		return err
	}
	set := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	setD := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	set(&m.RTSPListen, DefaultRTSPListen)
	set(&m.HTTPListen, DefaultHTTPListen)
	set(&m.GRPCListen, DefaultGRPCListen)
	set(&m.Realm, DefaultRealm)
	set(&m.Evictor, DefaultEvictor)
	setD(&m.TokenTTL, DefaultTokenTTL)
	setD(&m.NoShowGrace, DefaultNoShowGrace)
	setD(&m.QueueDeadline, DefaultQueueDeadline)
	setD(&m.OriginCheck, DefaultOriginCheck)
	setD(&m.CatalogRefresh, DefaultCatalogRefresh)
	setD(&m.RestoreGrace, DefaultRestoreGrace)
	setD(&m.PlanInterval, DefaultPlanInterval)
	setD(&m.FirstPlanWait, DefaultFirstPlanWait)
	setD(&m.ShiftCheck, DefaultShiftCheck)
	setD(&m.PopularitySave, DefaultPopularitySave)
	setD(&m.ProgressSave, DefaultProgressSave)
	setD(&m.OrderTimeout, DefaultOrderTimeout)
	setD(&m.WithdrawnGrace, DefaultWithdrawnGrace)
	setD(&m.HealthCheck, DefaultHealthCheck)
	setD(&m.StoreTimeout, DefaultStoreTimeout)
	channelsKnown := m.OriginChannels > 0
	if m.OriginChannels == 0 {
		m.OriginChannels = DefaultOriginChannels
	}
	if m.MaxSessionsPerUser == 0 {
		m.MaxSessionsPerUser = DefaultMaxSessionsPerUser
	}
	if m.MaxConnsPerAddr == 0 {
		m.MaxConnsPerAddr = DefaultMaxConnsPerAddr
	}
	if m.LoginFailures == 0 {
		m.LoginFailures = DefaultLoginFailures
	}
	setD(&m.LoginFailureRefill, DefaultLoginFailureRefill)
	m.logins = newLoginGuard(m.LoginFailures, m.LoginFailureRefill).withUserBudget(m.LoginFailuresPerUser)
	if m.RequestsPerUser == 0 {
		m.RequestsPerUser = DefaultRequestsPerUser
	}
	setD(&m.RequestRefill, DefaultRequestRefill)
	m.requests = newRequestLimiter(m.RequestsPerUser, m.RequestRefill)
	if m.Scheduler == (lsm.Config{}) {
		m.Scheduler = lsm.DefaultConfig()
	}
	if m.Scheduler.OriginChannels == 0 {
		// lall keeps sessions on holders when every origin channel is busy.
		m.Scheduler.OriginChannels = m.OriginChannels
	}
	// A fill on demand waits in the admission queue for a free origin
	// channel, not at a node with its viewer's session started, when the
	// origin's channels are known.
	m.Scheduler.FillNeedsChannel = channelsKnown
	m.log = m.Logger
	if m.log == nil {
		m.log = slog.Default()
	}
	if m.BOSS == nil {
		return errors.New("acm: BOSS is required")
	}
	if m.Store == nil && m.DataDir == "" {
		return errors.New("acm: DataDir (or Store) is required")
	}
	// A users file made for another realm would refuse every Digest.
	if r, ok := m.BOSS.(interface{ Realm() string }); ok && r.Realm() != m.Realm {
		return fmt.Errorf("acm: realm %q, but the BOSS's Digest HA1 values are for realm %q", m.Realm, r.Realm())
	}
	return nil
}

// checkNegatives refuses a negative duration or OriginChannels: 0 means
// the default, and a negative value is a mistake, not a default.
func (m *Manager) checkNegatives() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"TokenTTL", m.TokenTTL}, {"NoShowGrace", m.NoShowGrace}, {"QueueDeadline", m.QueueDeadline},
		{"CatalogRefresh", m.CatalogRefresh}, {"RestoreGrace", m.RestoreGrace}, {"PlanInterval", m.PlanInterval}, {"FirstPlanWait", m.FirstPlanWait},
		{"ShiftCheck", m.ShiftCheck}, {"PopularitySave", m.PopularitySave}, {"ProgressSave", m.ProgressSave}, {"OrderTimeout", m.OrderTimeout},
		{"LoginFailureRefill", m.LoginFailureRefill}, {"LeaderTTL", m.LeaderTTL}, {"HealthCheck", m.HealthCheck},
		{"OriginCheck", m.OriginCheck}, {"RequestRefill", m.RequestRefill}, {"StoreTimeout", m.StoreTimeout},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("acm: %s %s is negative (0 means the default)", d.name, durtext.Written(d.v)))
		}
	}
	if m.OriginChannels < 0 {
		errs = append(errs, fmt.Errorf("acm: OriginChannels %d is negative (0 means the default, %d)", m.OriginChannels, DefaultOriginChannels))
	}
	return errors.Join(errs...)
}
