package main

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"vodcluster/acm/auth"
	"vodcluster/cdp"
	"vodcluster/cdp/tsindex"
	"vodcluster/cmd/internal/durflag"
	"vodcluster/cmd/internal/probe"
	"vodcluster/cmd/internal/yamlcfg"
	"vodcluster/lsm"
	"vodcluster/smm"
)

// Checks of a configuration section's values that need neither its files
// (secret, users) nor the network, so that a bad value stops the process
// at start with the key named, and the examples in deploy/ can be checked
// by a test. Each section's check returns every problem it finds, joined.

// minHeartbeatInterval is the shortest scheduler.heartbeat_interval. The
// manager gives nodes its interval in whole milliseconds when they
// register, and they report at it (at their own 1 s when it rounds to
// 0): at 1ns every node was judged dead 3 ns after each report and shown
// down, and at 1ms a node on a busy machine was judged dead now and then
// (a pause of a few milliseconds was missed_heartbeats of them).
const minHeartbeatInterval = 100 * time.Millisecond

// minStoreTimeout is the shortest store_timeout. A front-door request
// whose store write takes longer is refused and the store taken as
// unavailable (every request refused until its next health check): below
// this a store in good health (a Redis in another rack, a disk's sync
// under load) would be taken down now and then.
const minStoreTimeout = 100 * time.Millisecond

// minSessionTimeout is the shortest node session_timeout. Players keep
// an RTSP session alive with RTCP receiver reports, sent about every 5 s
// (RFC 3550 §6.2, randomised up to 7.5 s), or with keepalives at a
// fraction of the timeout the node announces in whole seconds (a
// timeout under 1 s is announced as 0); an RTSP connection silent that
// long, and an HTTP send stalled that long, are closed too. At 1ms (a
// typo for 1m) every UDP session ended as it was set up, reason
// timeout, and the player got nothing; the node started without a word.
const minSessionTimeout = 10 * time.Second

// minLeaderTTL is the shortest store.leader_ttl of a Redis store, the
// planner lock's lease, as acm takes it (acm refuses less as it starts).
const minLeaderTTL = 30 * time.Millisecond

// minCatalogRefresh is the shortest catalog_refresh and
// storage.plan_interval. Each catalog read fetches the whole catalog from
// the origin, which looks at its directory at most once a second
// (catalog_poll_interval, 1s or more); each plan goes over every title
// and node. At 1ms (a typo for 1m) a manager with a catalog of 3 titles
// and no node took a third of a core, the origin answering 1,000 catalog
// reads a second, and planned back to back.
const minCatalogRefresh = time.Second

// inConfig names the file each of err's problems (a section's checks,
// errors.Join of them) is in, as the file's YAML errors do ("--config
// FILE: ..."): `vodcluster node --config FILE` said only "session_timeout
// 1ms: at least 10s", the file left to guess on a host with several.
// nil stays nil; path "" (no file) leaves err as it is.
func inConfig(path string, err error) error {
	if err == nil || path == "" {
		return err
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs := make([]error, 0, len(j.Unwrap()))
		for _, e := range j.Unwrap() {
			errs = append(errs, inConfig(path, e))
		}
		return errors.Join(errs...)
	}
	return fmt.Errorf("--config %s: %w", path, err)
}

// keyCheck collects a section's problems, each naming its key; file is
// the --config file the section was read from (nil: none) and section
// its key in it ("node"), to show a value as written at its line (show).
type keyCheck struct {
	errs    []error
	file    *yamlcfg.File
	section string
}

func (k *keyCheck) failf(format string, a ...any) { k.errs = append(k.errs, fmt.Errorf(format, a...)) }

func (k *keyCheck) err() error { return errors.Join(k.errs...) }

// show names the value v of key (its path within the section) as the
// operator wrote it, at its line, when the file has it so ("line 12:
// session_timeout 9999ms", "line 4: max_sessions -1"), else readably
// ("session_timeout 9.999s", "token_ttl 1h", not "1h0m0s";
// "max_sessions -1"): yamlcfg.File.Show.
func (k *keyCheck) show(key string, v any) string {
	return k.file.Show(k.section+"."+key, key, v)
}

// duration refuses a negative duration; 0 (or the key left out) is the
// default, given in def.
func (k *keyCheck) duration(key string, v time.Duration, def string) {
	if v < 0 {
		k.failf("%s: negative; give a positive duration, or 0 (or leave it out) for %s", k.show(key, v), def)
	}
}

// grpcAddr refuses a gRPC address (of the manager or the origin) that is
// not HOST:PORT with a port in 1..65535: gRPC dials port 443 of a bare
// host, and the process retried "connection refused" there for ever.
// Empty is left to the process (it dials nothing). what names the
// listener it should be and its default port.
func (k *keyCheck) grpcAddr(key, v, what string) {
	if v == "" {
		return
	}
	_, port, err := net.SplitHostPort(v)
	if p, perr := strconv.Atoi(port); err != nil || perr != nil || p < 1 || p > 65535 {
		k.failf("%s %q: want HOST:PORT, %s", key, probe.Redacted(v), what) // a URL given: without its password
	}
}

// count refuses a negative integer; 0 (or the key left out) means def.
func (k *keyCheck) count(key string, v int64, def string) {
	if v < 0 {
		k.failf("%s: negative; give a positive number, or 0 (or leave it out) for %s", k.show(key, v), def)
	}
}

// int32Count is count for a value that travels as an int32 (max
// sessions): above math.MaxInt32 is refused too.
func (k *keyCheck) int32Count(key string, v int64, def string) {
	k.count(key, v, def)
	if v > math.MaxInt32 {
		k.failf("%s: above the largest allowed, %d", k.show(key, v), math.MaxInt32)
	}
}

// limit checks a limit where -1 means none: below -1 is refused.
func (k *keyCheck) limit(key string, v int, def string) {
	if v < -1 {
		k.failf("%s: give a positive number, -1 for no limit, or 0 (or leave it out) for %s", k.show(key, v), def)
	}
}

// rtspsWithoutCert refuses an rtsps_listen without a certificate and
// key to serve it with (one of the two alone is serverTLSConfig's
// error).
func (k *keyCheck) rtspsWithoutCert(listen, cert, key string) {
	if listen != "" && cert == "" && key == "" {
		k.failf("%s: needs rtsp_tls_cert_file and rtsp_tls_key_file (the RTSPS listener's certificate); leave rtsps_listen out for no RTSPS", k.show("rtsps_listen", listen))
	}
}

// ratio refuses a negative (or NaN) number; 0 means the default.
func (k *keyCheck) ratio(key string, v float64) {
	if !(v >= 0) {
		k.failf("%s: negative; give a positive number, or 0 (or leave it out) for the default", k.show(key, v))
	}
}

// validate checks the manager section: no negative duration, count or
// weight (the -1 of max_sessions_per_user, login_failures,
// login_failures_per_user and requests_per_user excepted), a scheduling policy lsm knows with values
// it accepts, and a storage policy and planner smm knows with values it
// accepts.
func (c ManagerConfig) validate() error {
	k := keyCheck{file: c.file, section: "manager"}
	k.grpcAddr("origin", c.Origin, "the origin's listen (port 9100 by default)")
	k.rtspsWithoutCert(c.RTSPSListen, c.RTSPTLSCert, c.RTSPTLSKey)
	k.duration("token_ttl", c.TokenTTL, "60s")
	k.duration("queue_deadline", c.QueueDeadline, "5s")
	k.duration("login_failure_refill", c.LoginRefill, "30s")
	k.duration("request_refill", c.RequestRefill, "500ms")
	k.duration("restore_grace", c.RestoreGrace, "30s")
	k.duration("catalog_refresh", c.CatalogRefresh, "1m")
	if c.CatalogRefresh > 0 && c.CatalogRefresh < minCatalogRefresh {
		k.failf("%s: at least %s (1m by default): each read fetches the origin's whole catalog, which the origin reads again at most once a second", k.show("catalog_refresh", c.CatalogRefresh), durflag.Readable(minCatalogRefresh))
	}
	k.duration("store_timeout", c.StoreTimeout, "2s")
	if c.StoreTimeout > 0 && c.StoreTimeout < minStoreTimeout {
		k.failf("%s: at least %s (2s by default): a working store that takes longer would be taken as unavailable and every request refused", k.show("store_timeout", c.StoreTimeout), durflag.Readable(minStoreTimeout))
	}
	k.limit("max_sessions_per_user", c.MaxSessions, "8")
	k.limit("login_failures", c.LoginFailures, "10")
	k.limit("login_failures_per_user", c.LoginPerUser, "ten times login_failures")
	k.limit("requests_per_user", c.RequestsPerUser, "20")
	k.limit("max_conns_per_addr", c.MaxConnsPerAddr, "256")
	k.duration("subscriber_tokens.leeway", c.SubscriberTokens.Leeway, "30s")
	if l := c.SubscriberTokens.Leeway; l > auth.MaxTokenLeeway {
		k.failf("%s: at most %s (30s by default): the clock skew allowed on a token's exp, nbf and iat", k.show("subscriber_tokens.leeway", l), durflag.Readable(auth.MaxTokenLeeway))
	}
	if c.SubscriberTokens.KeyFile != "" && c.SubscriberTokens.SecretFile != "" {
		k.failf("subscriber_tokens: key_file and secret_file both set; give the portal's public key(s) or a shared secret, not both")
	}
	if st := c.SubscriberTokens; st.KeyFile == "" && st.SecretFile == "" && (st.Issuer != "" || st.Audience != "" || st.Leeway != 0) {
		k.failf("subscriber_tokens: issuer, audience or leeway set without key_file or secret_file; give the portal's public key(s) or a shared secret (or leave the section out: no tokens)")
	}

	s := c.Scheduler
	for _, f := range []struct {
		key string
		v   float64
	}{{"a", s.A}, {"b", s.B}, {"normal", s.Normal}, {"overload", s.Overload}, {"disk_pressure", s.DiskPressure},
		{"slow_start_floor", s.SlowStartFloor}, {"lard_low", s.LARDLow}, {"lard_high", s.LARDHigh}, {"chbl_factor", s.CHBLFactor}} {
		k.ratio("scheduler."+f.key, f.v)
	}
	k.count("scheduler.fill_ref_bps", s.FillRefBps, "4000000")
	k.duration("scheduler.heartbeat_interval", s.HeartbeatInterval, "1s")
	if s.HeartbeatInterval > 0 && s.HeartbeatInterval < minHeartbeatInterval {
		k.failf("%s: at least %s (1s by default): nodes report at it in whole milliseconds, below 1ms at their own 1s, and a node silent for missed_heartbeats of it is dead, its sessions orphaned", k.show("scheduler.heartbeat_interval", s.HeartbeatInterval), durflag.Readable(minHeartbeatInterval))
	}
	k.count("scheduler.missed_heartbeats", int64(s.MissedHeartbeats), "3")
	k.duration("scheduler.slow_start", s.SlowStart, "the scheduler's default")

	st := c.Storage
	k.duration("storage.plan_interval", st.PlanInterval, "30s")
	if st.PlanInterval > 0 && st.PlanInterval < minCatalogRefresh {
		k.failf("%s: at least %s (30s by default): each plan goes over every title and node", k.show("storage.plan_interval", st.PlanInterval), durflag.Readable(minCatalogRefresh))
	}
	k.duration("storage.first_plan_wait", st.FirstPlanWait, "3m")
	k.count("storage.origin_channels", int64(st.OriginChannels), "4")
	k.duration("storage.half_life", st.HalfLife, "the default")
	k.ratio("storage.target_utilization", st.TargetUtilization)
	k.duration("storage.off_peak_start", st.OffPeakStart, "the default window")
	k.duration("storage.off_peak_end", st.OffPeakEnd, "the default window")
	k.count("storage.max_fills_per_node", int64(st.MaxFillsPerNode), "the default")
	k.duration("storage.retry_base", st.RetryBase, "the default")
	k.duration("storage.retry_max", st.RetryMax, "the default")
	k.duration("storage.evict_hold", st.EvictHold, "1h")
	// -1s is the one negative: never evicted for a withdrawal.
	if st.WithdrawnGrace < 0 && st.WithdrawnGrace != -time.Second {
		k.failf("%s: want a duration, 0 (or leave it out) for 1h, or -1s for never (a withdrawn title's copies stay until a fill needs their room)",
			k.show("storage.withdrawn_grace", st.WithdrawnGrace))
	}

	k.count("store.redis_db", int64(c.Store.RedisDB), "database 0")
	if c.Store.Backend == "redis" && strings.TrimSpace(c.Store.RedisAddr) == "" {
		// The store's own refusal named no key: "store: redis: empty
		// address".
		k.failf("%s: store.redis_addr is required: the Redis both managers share, HOST:PORT (e.g. 127.0.0.1:6379) or a Unix socket's path", k.show("store.backend", c.Store.Backend))
	}
	if a := c.Store.RedisAddr; a != "" && (strings.Contains(a, "://") || strings.Contains(a, "@")) {
		// A redis:// URL with its password was quoted whole, twice, by
		// the dial's "too many colons in address".
		if path, ok := strings.CutPrefix(a, "unix://"); ok && path != "" && !strings.Contains(a, "@") {
			// A socket's path alone is taken (it begins with '/'); the
			// refusal pointed at HOST:PORT only.
			k.failf("store.redis_addr %q: a Unix socket is given by its path alone (redis_addr: %s), not a URL; or HOST:PORT (e.g. 127.0.0.1:6379)", a, path)
		} else {
			k.failf("store.redis_addr %q: want HOST:PORT (e.g. 127.0.0.1:6379) or a Unix socket's path (/run/redis/redis.sock), not a URL: the password goes in redis_password, the user in redis_username, the database number in redis_db, TLS in redis_tls", probe.Redacted(a))
		}
	}
	k.duration("store.leader_ttl", c.Store.LeaderTTL, "10s")
	if lt := c.Store.LeaderTTL; c.Store.Backend == "redis" && lt > 0 && lt < minLeaderTTL {
		// acm refused it as it started: "acm: leader TTL 10ms".
		k.failf("%s: at least %s (10s by default): the active manager renews the planner lock at a third of it", k.show("store.leader_ttl", lt), durflag.Readable(minLeaderTTL))
	}
	if c.TokenTTL > 0 && c.TokenTTL < time.Second {
		k.failf("%s: at least 1s (a redirected player needs that long to reach its node; 60s by default)", k.show("token_ttl", c.TokenTTL))
	}
	if st.Policy != "" && st.Eviction != "" && st.Policy != st.Eviction {
		k.failf("storage.policy %q and storage.eviction %q: eviction is the older name of policy; give one", st.Policy, st.Eviction)
	}
	if err := k.err(); err != nil {
		return err
	}
	// The values are not negative: what is left to check is lsm's and
	// smm's own rules (policy names, ranges, orders).
	// Each is named by the keys that break it, at their lines.
	checkScheduler := func(s any) error {
		_, err := lsm.New(schedulerConfig(s.(SchedulerConfig)))
		return err
	}
	if err := checkScheduler(c.Scheduler); err != nil {
		return k.blameRule("scheduler", "scheduler.", c.Scheduler, err, checkScheduler)
	}
	checkStorage := func(s any) error {
		st := s.(StorageConfig)
		_, err := smm.NewStorage(orString(st.Policy, st.Eviction), smm.StorageConfig{
			Planner: st.Planner, Replicator: replicatorConfig(st),
		})
		return err
	}
	if err := checkStorage(st); err != nil {
		return k.blameRule("storage", "storage.", st, err, checkStorage)
	}
	return nil
}

// validate checks the node section: no negative capacity, weight or
// timeout, an RTP port pair that exists, and an eviction policy smm knows.
func (c NodeConfig) validate() error {
	k := keyCheck{file: c.file, section: "node"}
	k.grpcAddr("manager", c.Manager, "the manager's grpc_listen (port 9090 by default)")
	k.rtspsWithoutCert(c.RTSPSListen, c.RTSPTLSCert, c.RTSPTLSKey)
	k.grpcAddr("origin", c.Origin, "the origin's listen (port 9100 by default)")
	if c.RTPPort < 0 || c.RTPPort > 65534 || c.RTPPort%2 != 0 {
		k.failf("%s: want an even port below 65535 (RTCP takes the next), or 0", k.show("rtp_port", c.RTPPort))
	}
	if c.TCPOnly && c.RTPPort != 0 {
		k.failf("%s: a node with tcp_only opens no UDP port; remove one of rtp_port and tcp_only", k.show("rtp_port", c.RTPPort))
	}
	k.count("egress_bps", c.EgressBps, "1 Gbit/s (1000000000)")
	k.int32Count("max_sessions", int64(c.MaxSessions), "no limit but egress_bps")
	k.count("disk_bytes", c.DiskBytes, "100 GB (100000000000)")
	k.count("weight", int64(c.Weight), "100")
	if c.Weight > lsm.MaxWeight {
		k.failf("%s: above %d, the largest IPVS weight (the manager refuses the node's registration)", k.show("weight", c.Weight), lsm.MaxWeight)
	}
	k.duration("session_timeout", c.SessionTimeout, "60s")
	if c.SessionTimeout > 0 && c.SessionTimeout < minSessionTimeout {
		k.failf("%s: at least %s (60s by default): players keep their sessions alive with RTCP receiver reports about every 5 s, or keepalives at a fraction of the timeout the node announces in whole seconds; a shorter one ends sessions that play", k.show("session_timeout", c.SessionTimeout), durflag.Readable(minSessionTimeout))
	}
	k.duration("pause_timeout", c.PauseTimeout, "5m")
	k.duration("fill_retry_for", c.FillRetryFor, "30s")
	k.limit("max_conns_per_addr", c.MaxConnsPerAddr, "256")
	if c.OriginRanges < -1 {
		k.failf("%s: want 1 or more, 0 for the default (1), or -1 for none (ranges far ahead of a fill wait for it)", k.show("origin_ranges", c.OriginRanges))
	}
	if c.Eviction != "" {
		if _, err := smm.NewEvictor(c.Eviction); err != nil {
			k.failf("eviction: %w", err)
		}
	}
	return k.err()
}

// validate checks the cdp section: a title directory, no negative link
// cost, a catalog_poll_interval of 1s or more (or 0, or -1s: SIGHUP
// only), and a chunk size the origin accepts.
func (c CDPConfig) validate() error {
	k := keyCheck{file: c.file, section: "cdp"}
	if c.Dir == "" {
		k.failf("dir is required (the directory of the title files)")
	}
	k.duration("setup_delay", c.SetupDelay, "none")
	k.count("max_transfers", int64(c.MaxTransfers), "unlimited")
	k.count("transfer_rate_bps", c.TransferRateBps, "unlimited")
	// -1s is the one negative: SIGHUP only. Another (a typo of -15s,
	// or -1 read as 1 ns) silently stopped every look at the directory.
	if (c.CatalogPoll > 0 && c.CatalogPoll < time.Second) || (c.CatalogPoll < 0 && c.CatalogPoll != -time.Second) {
		k.failf("%s: want 1s or more (each look stats every title file), 0 (or leave it out) for %s, or -1s to read the directory on SIGHUP only",
			k.show("catalog_poll_interval", c.CatalogPoll), durflag.Readable(cdp.DefaultCatalogPoll))
	}
	if c.ChunkBytes < 0 || c.ChunkBytes > cdp.MaxChunkBytes || c.ChunkBytes%tsindex.PacketSize != 0 {
		k.failf("%s: want a multiple of %d (whole MPEG-TS packets) up to %d, or 0 (or leave it out) for %d",
			k.show("chunk_bytes", c.ChunkBytes), tsindex.PacketSize, cdp.MaxChunkBytes, cdp.DefaultChunkBytes)
	}
	return k.err()
}
