package main

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"vodcluster/acm"
	"vodcluster/acm/boss"
	"vodcluster/acm/store"
	"vodcluster/lsm"
	"vodcluster/proto/grpctls"
	"vodcluster/smm"
)

func managerCmd() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the manager: RTSP/HTTP front door (acm), scheduler (lsm), storage manager (smm), gRPC for nodes and vodctl",
		RunE: func(*cobra.Command, []string) error {
			h := catchHangups() // from now: a SIGHUP while the manager starts does not kill it
			defer h.stop()
			cfg, err := loadConfig(path)
			if err != nil {
				return err
			}
			if err := cfg.needSection("manager"); err != nil {
				return err
			}
			if err := cfg.Manager.validate(); err != nil {
				return inConfig(path, err)
			}
			m, err := newManager(cfg.Manager)
			if err != nil {
				return inConfig(path, err)
			}
			logStartWarnings(cfg.Manager.startWarnings())
			return namingListenKey(path, runUntilSignal(m, func() { handleManagerHangups(h, m.users, m.Manager) }), cfg.Manager.listenKeys())
		},
	}
	cmd.Flags().StringVarP(&path, "config", "c", "", "configuration file (YAML, section manager:)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// newManager builds the manager from its configuration section and opens
// its state store.
func newManager(c ManagerConfig) (*managerProcess, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	secret, err := readSecret(c.SecretFile)
	if err != nil {
		return nil, err
	}
	grpcCreds, err := serverTLS("grpc_tls_cert_file", c.GRPCTLSCert, "grpc_tls_key_file", c.GRPCTLSKey)
	if err != nil {
		return nil, err
	}
	httpTLS, err := httpsTLS("http_tls_cert_file", c.HTTPTLSCert, "http_tls_key_file", c.HTTPTLSKey)
	if err != nil {
		return nil, err
	}
	rtspTLS, err := serverTLSConfig("rtsp_tls_cert_file", c.RTSPTLSCert, "rtsp_tls_key_file", c.RTSPTLSKey)
	if err != nil {
		return nil, err
	}
	rtspsListen := "" // rtsps_listen without a certificate: validate
	if rtspTLS != nil {
		rtspsListen = orString(c.RTSPSListen, acm.DefaultRTSPSListen)
	}
	siteList, err := sites(c.Sites)
	if err != nil {
		return nil, err
	}
	originCreds, err := clientTLS("origin", c.OriginTLS, c.OriginTLSCA)
	if err != nil {
		return nil, err
	}
	if c.UsersFile == "" {
		return nil, errors.New("users_file is required (the subscribers: vodcluster user NAME --file FILE)")
	}
	users, err := boss.WatchFile(c.UsersFile, slog.Default().With("component", "users"))
	if err != nil {
		return nil, fmt.Errorf("users_file: %w", err)
	}
	var adminToken string
	if c.AdminTokenFile != "" {
		b, err := os.ReadFile(c.AdminTokenFile)
		if err != nil {
			return nil, fmt.Errorf("admin_token_file: %w", err)
		}
		if adminToken = strings.TrimSpace(string(b)); len(adminToken) < 16 {
			return nil, fmt.Errorf("admin_token_file %s: %d characters, need at least 16", c.AdminTokenFile, len(adminToken))
		}
	}
	if g := orString(c.GRPCListen, acm.DefaultGRPCListen); adminToken == "" && !c.AdminAPIOpen && !grpctls.Loopback(g) {
		return nil, fmt.Errorf("admin_token_file is not set and grpc_listen %q is not a loopback address: the Admin API (vodctl: list and end sessions, suspend subscribers, drain and forget nodes) would be open to anyone who reaches it; set admin_token_file (16 characters or more: openssl rand -hex 24 > FILE), listen on loopback, or set admin_api_open: true to run it open", g)
	}
	if adminToken == "" {
		msg := "no admin_token_file: the Admin API (vodctl) is open to anyone who reaches the manager's gRPC port"
		if c.AdminAPIOpen {
			msg = "admin_api_open: the Admin API (vodctl: sessions, suspensions, drains) is open to anyone who reaches the manager's gRPC port, as configured"
		}
		slog.Warn(msg, "grpc_listen", orString(c.GRPCListen, acm.DefaultGRPCListen))
	}
	tokens, err := c.SubscriberTokens.subscriberTokens()
	if err != nil {
		return nil, err
	}
	if f := c.SubscriberTokens.SecretFile; f != "" {
		// The portal must not hold the cluster secret: it could sign
		// admission tokens for the nodes itself, and the admission tokens
		// the front door signs (HS256 under the cluster secret, the
		// decoded bytes of a hex file) would, under the same key, verify
		// as subscriber tokens, for any title, from anywhere.
		b, err := readTokenSecret(f)
		raw, rerr := os.ReadFile(c.SecretFile)
		if err == nil && (bytes.Equal(b, secret) || (rerr == nil && bytes.Equal(bytes.TrimSpace(b), bytes.TrimSpace(raw)))) {
			return nil, fmt.Errorf("subscriber_tokens.secret_file %s holds the cluster secret (secret_file %s): the portal could then sign admission tokens for the nodes; give the portal a secret of its own (openssl rand -hex 32)", f, c.SecretFile)
		}
	}
	st, err := openStore(c)
	if err != nil {
		return nil, err
	}
	return &managerProcess{st: st, users: users, Manager: &acm.Manager{
		Store:                st,
		LeaderTTL:            c.Store.LeaderTTL,
		RTSPListen:           orString(c.RTSPListen, acm.DefaultRTSPListen),
		HTTPListen:           orString(c.HTTPListen, acm.DefaultHTTPListen),
		GRPCListen:           orString(c.GRPCListen, acm.DefaultGRPCListen),
		MetricsListen:        c.MetricsListen,
		DataDir:              c.DataDir,
		OriginAddr:           c.Origin,
		GRPCCreds:            grpcCreds,
		OriginCreds:          originCreds,
		Secret:               secret,
		Realm:                c.Realm,
		BOSS:                 users,
		AdminToken:           adminToken,
		SessionRecordsFile:   c.SessionRecordsFile,
		HTTPTLS:              httpTLS,
		RTSPTLS:              rtspTLS,
		RTSPSListen:          rtspsListen,
		Sites:                siteList,
		SiteOnly:             c.SiteOnly,
		SubscriberTokens:     tokens,
		TokenTTL:             c.TokenTTL,
		QueueDeadline:        c.QueueDeadline,
		MaxSessionsPerUser:   c.MaxSessions,
		LoginFailures:        c.LoginFailures,
		LoginFailuresPerUser: c.LoginPerUser,
		LoginFailureRefill:   c.LoginRefill,
		RequestsPerUser:      c.RequestsPerUser,
		RequestRefill:        c.RequestRefill,
		MaxConnsPerAddr:      c.MaxConnsPerAddr,
		RestoreGrace:         c.RestoreGrace,
		CatalogRefresh:       c.CatalogRefresh,
		StoreTimeout:         c.StoreTimeout,
		Scheduler:            schedulerConfig(c.Scheduler),
		Evictor:              orString(c.Storage.Policy, c.Storage.Eviction),
		StoragePlanner:       c.Storage.Planner,
		PlanInterval:         c.Storage.PlanInterval,
		FirstPlanWait:        c.Storage.FirstPlanWait,
		OriginChannels:       c.Storage.OriginChannels,
		WithdrawnGrace:       c.Storage.WithdrawnGrace,
		Replicator:           replicatorConfig(c.Storage),
		Logger:               slog.Default().With("component", "manager"),
	}}, nil
}

// openStore opens the state store of the manager's store section: badger
// in data_dir, or the shared Redis.
func openStore(c ManagerConfig) (store.Store, error) {
	r := store.RedisOptions{
		Addr: c.Store.RedisAddr, Username: c.Store.RedisUsername, Password: c.Store.RedisPassword,
		DB: c.Store.RedisDB, Prefix: c.Store.RedisPrefix,
	}
	if c.Store.RedisTLS || c.Store.RedisTLSCA != "" {
		var err error
		if r.TLS, err = store.RedisTLS(c.Store.RedisAddr, c.Store.RedisTLSCA); err != nil {
			return nil, storeOpenError(err)
		}
	}
	st, err := store.Open(c.Store.Backend, c.DataDir, r, slog.Default().With("component", "store"))
	if err != nil {
		return nil, storeOpenError(err)
	}
	return st, nil
}

// storeOpenError is err, of opening the manager's store, for the
// operator: "manager store: " in front, once (the store's own errors
// begin "store: "), and, when the Redis refused the credentials
// (store.AuthError), the settings that give them.
func storeOpenError(err error) error {
	msg := "manager store: " + strings.TrimPrefix(err.Error(), "store: ")
	if advice := acm.StoreAuthAdvice(err); advice != "" {
		msg += ": " + advice
	}
	return &openError{msg: msg, err: err}
}

// openError is an error of opening the manager's store in the
// operator's words (storeOpenError); it unwraps to the store's error.
type openError struct {
	msg string
	err error
}

func (e *openError) Error() string { return e.msg }
func (e *openError) Unwrap() error { return e.err }

// managerProcess is the manager with the store it runs on: Close closes
// both (acm.Manager does not close a store it is given).
type managerProcess struct {
	*acm.Manager
	st    store.Store
	users *boss.WatchedFile // the users file, reloaded when it changes (and on SIGHUP)
}

// reloadOnHangup reads the users file again and reopens the session
// records file (log rotation) at every SIGHUP until the returned stop is
// called.
func reloadOnHangup(users *boss.WatchedFile, m *acm.Manager) (stop func()) {
	h := catchHangups()
	handleManagerHangups(h, users, m)
	return h.stop
}

// handleManagerHangups makes every SIGHUP h catches, one caught before
// included, read the users file again and reopen the session records
// file (log rotation).
func handleManagerHangups(h *hangups, users *boss.WatchedFile, m *acm.Manager) {
	h.handle("reading the users file (and reopening the session records file)", "file", users.Path(), func() error {
		err := users.Reload()
		return errors.Join(err, m.ReopenSessionRecords())
	})
}

// Start starts the manager; on error the store is closed too.
func (p *managerProcess) Start() error {
	err := p.Manager.Start()
	if err != nil {
		p.st.Close()
	}
	return err
}

// Close closes the manager, then the store.
func (p *managerProcess) Close() error {
	return errors.Join(p.Manager.Close(), p.st.Close())
}

// replicatorConfig maps the storage section onto smm's Replicator; zero
// fields keep smm's defaults.
func replicatorConfig(c StorageConfig) smm.ReplicatorConfig {
	r := smm.ReplicatorConfig{
		HalfLife:          c.HalfLife,
		TargetUtilization: c.TargetUtilization,
		MaxFillsPerNode:   c.MaxFillsPerNode,
		RetryBase:         c.RetryBase,
		RetryMax:          c.RetryMax,
		EvictHold:         c.EvictHold,
	}
	if c.OffPeakStart != 0 || c.OffPeakEnd != 0 {
		r.OffPeak = smm.Window{Start: c.OffPeakStart, End: c.OffPeakEnd}
	}
	return r
}

// schedulerConfig overlays the configured values on lsm.DefaultConfig.
func schedulerConfig(s SchedulerConfig) lsm.Config {
	c := lsm.DefaultConfig()
	c.Policy = orString(s.Policy, c.Policy)
	setF := func(dst *float64, v float64) {
		if v != 0 {
			*dst = v
		}
	}
	setF(&c.A, s.A)
	setF(&c.B, s.B)
	setF(&c.Normal, s.Normal)
	setF(&c.Overload, s.Overload)
	setF(&c.DiskPressure, s.DiskPressure)
	setF(&c.SlowStartFloor, s.SlowStartFloor)
	setF(&c.LARDLow, s.LARDLow)
	setF(&c.LARDHigh, s.LARDHigh)
	setF(&c.CHBLFactor, s.CHBLFactor)
	if s.FillRefBps != 0 {
		c.FillRefBps = s.FillRefBps
	}
	c.HeartbeatInterval = orDuration(s.HeartbeatInterval, c.HeartbeatInterval)
	if s.MissedHeartbeats != 0 {
		c.MissedHeartbeats = s.MissedHeartbeats
	}
	c.SlowStart = orDuration(s.SlowStart, c.SlowStart)
	return c
}
