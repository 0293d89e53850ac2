package main

import (
	"bytes"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc/credentials"

	"vodcluster/acm"
	"vodcluster/acm/auth"
	"vodcluster/cmd/internal/fileflag"
	"vodcluster/cmd/internal/yamlcfg"
	"vodcluster/proto/grpctls"
)

// Config is the YAML configuration file of every vodcluster process; each
// subcommand reads its own section (manager, node or cdp). Unknown keys are
// errors. Durations are Go durations ("60s", "500ms"), or whole days and
// then, optionally, one ("7d", "1d12h"), as the duration flags take them
// (durflag); bit/s and bytes are integers. A zero or absent value means
// the key's default; a negative one is an error naming the key
// (validate.go), except the -1 ("no limit") of
// max_sessions_per_user, login_failures, login_failures_per_user,
// requests_per_user and max_conns_per_addr.
type Config struct {
	Manager ManagerConfig `yaml:"manager"`
	Node    NodeConfig    `yaml:"node"`
	CDP     CDPConfig     `yaml:"cdp"`

	path     string   // the file it was read from; empty: none
	sections []string // the top-level keys the file has, in its order
}

// needSection returns an error naming the file when it was read from one
// that has no top-level section role ("manager", "node" or "cdp"): the
// process would start on defaults alone and stop on the first setting its
// own section lacks (secret_file, dir), which the file may well hold under
// another role's section (vodcluster manager --config node.yaml).
func (c *Config) needSection(role string) error {
	if c.path == "" || slices.Contains(c.sections, role) {
		return nil
	}
	has := "nothing"
	if len(c.sections) > 0 {
		has = strings.Join(c.sections, ":, ") + ":"
	}
	return fmt.Errorf("--config %s: no %s: section (the file has %s); vodcluster %s reads only its own section: give it the %s config (deploy/config/%s.yaml)",
		c.path, role, has, role, role, role)
}

// ManagerConfig configures `vodcluster manager` (acm + lsm + smm).
type ManagerConfig struct {
	RTSPListen      string        `yaml:"rtsp_listen"`             // front door RTSP, default ":8554"
	HTTPListen      string        `yaml:"http_listen"`             // front door HTTP, default ":8080"
	GRPCListen      string        `yaml:"grpc_listen"`             // NodeControl + Admin, default ":9090"
	MetricsListen   string        `yaml:"metrics_listen"`          // Prometheus /metrics; empty: none
	DataDir         string        `yaml:"data_dir"`                // badger state directory (store.backend badger)
	Origin          string        `yaml:"origin"`                  // CDP gRPC host:port
	OriginTLS       bool          `yaml:"origin_tls"`              // TLS to the origin, its certificate verified for origin's host
	OriginTLSCA     string        `yaml:"origin_tls_ca_file"`      // PEM CA(s) to verify it with (implies origin_tls); empty: the system's roots
	GRPCTLSCert     string        `yaml:"grpc_tls_cert_file"`      // PEM certificate chain of the gRPC server (nodes, vodctl); with grpc_tls_key_file: TLS
	GRPCTLSKey      string        `yaml:"grpc_tls_key_file"`       // its PEM private key
	HTTPTLSCert     string        `yaml:"http_tls_cert_file"`      // PEM certificate chain of the HTTP front door; with http_tls_key_file it speaks HTTPS only
	HTTPTLSKey      string        `yaml:"http_tls_key_file"`       // its PEM private key
	RTSPTLSCert     string        `yaml:"rtsp_tls_cert_file"`      // PEM certificate chain of an RTSPS front door (rtsps://) beside the plain RTSP one; with rtsp_tls_key_file
	RTSPTLSKey      string        `yaml:"rtsp_tls_key_file"`       // its PEM private key
	RTSPSListen     string        `yaml:"rtsps_listen"`            // RTSPS front door, default ":8322" (with rtsp_tls_cert_file)
	SecretFile      string        `yaml:"secret_file"`             // cluster secret (token HMAC key), shared with nodes
	UsersFile       string        `yaml:"users_file"`              // subscribers (bcrypt + digest HA1 + packages)
	AdminTokenFile  string        `yaml:"admin_token_file"`        // bearer token vodctl must present (at least 16 characters); empty: Admin API open, refused unless grpc_listen is loopback or admin_api_open
	AdminAPIOpen    bool          `yaml:"admin_api_open"`          // run without admin_token_file on a grpc_listen that is not loopback (anyone reaching it may end sessions, suspend subscribers, drain nodes)
	Realm           string        `yaml:"realm"`                   // authentication realm, default "vodcluster"
	TokenTTL        time.Duration `yaml:"token_ttl"`               // time a client has to reach its node, default 60s
	QueueDeadline   time.Duration `yaml:"queue_deadline"`          // longest wait for a node, default 5s
	MaxSessions     int           `yaml:"max_sessions_per_user"`   // live sessions per subscriber, default 8; -1 = no cap
	LoginFailures   int           `yaml:"login_failures"`          // failed logins per client IP and user before refusals (ten times that per IP over all names), default 10; -1 = no limit
	LoginRefill     time.Duration `yaml:"login_failure_refill"`    // one more failed login allowed every, default 30s
	LoginPerUser    int           `yaml:"login_failures_per_user"` // failed logins of one user name over all client IPs but those it logged in from within 7 days, default ten times login_failures (one more every login_failure_refill/10); -1 = no such limit
	RequestsPerUser int           `yaml:"requests_per_user"`       // front-door title requests (DESCRIBE/SETUP, GET) a subscriber may make at once, then refused (RTSP 503, HTTP 429) until one more is allowed, default 20; -1 = no limit
	RequestRefill   time.Duration `yaml:"request_refill"`          // one more title request allowed every, default 500ms
	MaxConnsPerAddr int           `yaml:"max_conns_per_addr"`      // open front-door connections (RTSP, RTSPS, HTTP) of one client address (IPv6: /64), then answered 503 and closed at accept, default 256; -1 = no limit
	RestoreGrace    time.Duration `yaml:"restore_grace"`           // how long sessions wait for their dead or unregistered node, default 30s
	CatalogRefresh  time.Duration `yaml:"catalog_refresh"`         // how often the origin's catalog is read (titles published or withdrawn there are served or refused from then on), default 1m
	// StoreTimeout: how long a front-door request waits for the store
	// (its new session's write, the deletes of the sessions it ends);
	// past it the request is refused (503 with Retry-After) and the store
	// taken as unavailable until it answers again (read at once, then
	// again each store_timeout while it does not); default 2s, at least
	// 100ms.
	StoreTimeout time.Duration `yaml:"store_timeout"`
	// SessionRecordsFile: one JSON line per ended session (billing,
	// royalties, analytics); reopened on SIGHUP after a log rotation.
	SessionRecordsFile string `yaml:"session_records_file"`
	// Sites: the operator's sites and their client prefixes; viewers are
	// placed on their site's nodes first (node config site).
	Sites []SiteConfig `yaml:"sites"`
	// SiteOnly: a viewer whose site's nodes cannot take it is refused
	// rather than served from another site.
	SiteOnly  bool            `yaml:"site_only"`
	Scheduler SchedulerConfig `yaml:"scheduler"`
	Storage   StorageConfig   `yaml:"storage"`
	Store     StoreConfig     `yaml:"store"`
	// SubscriberTokens: the operator's portal's signed tokens (JWT) the
	// front door accepts instead of a password; off when neither file is
	// set.
	SubscriberTokens SubscriberTokensConfig `yaml:"subscriber_tokens"`

	file *yamlcfg.File // the --config file it was read from (nil: none), for validate's messages: a value as written, at its line
}

// SiteConfig is one of manager.sites: a site's name (as its nodes'
// site key) and the client address prefixes (CIDR) it serves.
type SiteConfig struct {
	Name    string   `yaml:"name"`
	Clients []string `yaml:"clients"` // e.g. 10.1.0.0/16, 2001:db8:1::/48
}

// sites parses manager.sites. Errors name the site and the prefix.
func sites(cs []SiteConfig) ([]acm.Site, error) {
	out := make([]acm.Site, 0, len(cs))
	for _, c := range cs {
		s := acm.Site{Name: c.Name}
		for _, p := range c.Clients {
			pr, err := netip.ParsePrefix(p)
			if err != nil {
				return nil, fmt.Errorf("sites: %q: client prefix %q: want CIDR (10.1.0.0/16, 2001:db8::/32)", c.Name, p)
			}
			s.Clients = append(s.Clients, pr)
		}
		out = append(out, s)
	}
	return out, nil
}

// SubscriberTokensConfig is manager.subscriber_tokens: how the front
// door verifies the subscriber tokens (JWT, RFC 7519) an operator's portal
// signs and players present as ?token= in the title's URL or as
// "Authorization: Bearer" (auth.SubscriberTokens). Exactly one of
// key_file and secret_file enables them.
type SubscriberTokensConfig struct {
	KeyFile    string        `yaml:"key_file"`    // PEM public key(s) of the portal: RS256/384/512, PS*, ES256/384/512, EdDSA (several: any verifies, for a key rotation)
	SecretFile string        `yaml:"secret_file"` // or a key shared with the portal (HS256/384/512): the file's bytes as they are (a final newline dropped), at least 32
	Issuer     string        `yaml:"issuer"`      // the iss a token must carry; empty: not checked
	Audience   string        `yaml:"audience"`    // a value a token's aud must hold; empty: not checked
	Leeway     time.Duration `yaml:"leeway"`      // clock skew allowed on exp, nbf and iat, default 30s, at most 5m
}

// subscriberTokens builds the verifier of c, nil when tokens are off.
// Errors: a file that cannot be read or holds no usable key, both files
// set, a negative leeway.
func (c SubscriberTokensConfig) subscriberTokens() (*auth.SubscriberTokens, error) {
	if c.KeyFile == "" && c.SecretFile == "" {
		return nil, nil
	}
	cfg := auth.SubscriberTokenConfig{Issuer: c.Issuer, Audience: c.Audience, Leeway: c.Leeway}
	if c.KeyFile != "" {
		b, err := os.ReadFile(c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("subscriber_tokens.key_file: %w", err)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			return nil, fmt.Errorf("subscriber_tokens.key_file %s is empty: put the portal's PEM public key(s) in it", c.KeyFile)
		}
		cfg.PublicKeysPEM = b
	}
	if c.SecretFile != "" {
		b, err := readTokenSecret(c.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("subscriber_tokens.secret_file: %w", err)
		}
		cfg.HMACSecret = b
	}
	v, err := auth.NewSubscriberTokens(cfg)
	if err != nil {
		return nil, fmt.Errorf("manager.subscriber_tokens (%s%s): %w", c.KeyFile, c.SecretFile, err)
	}
	return v, nil
}

// StoreConfig chooses the manager's state store: badger in data_dir (the
// default, one manager) or a Redis shared by an active and a standby
// manager behind the front door's virtual IP (the one holding the planner
// lock plans; deploy/README.md).
type StoreConfig struct {
	Backend       string        `yaml:"backend"`           // badger (default) or redis
	RedisAddr     string        `yaml:"redis_addr"`        // host:port, or a Unix socket's path (beginning with /)
	RedisPassword string        `yaml:"redis_password"`    // requirepass or ACL password; empty: none
	RedisUsername string        `yaml:"redis_username"`    // ACL user; empty: default
	RedisDB       int           `yaml:"redis_db"`          // database number, default 0
	RedisPrefix   string        `yaml:"redis_prefix"`      // key prefix, one per cluster sharing a Redis; default "vodcluster:"
	RedisTLS      bool          `yaml:"redis_tls"`         // TLS to Redis, its certificate verified for redis_addr's host
	RedisTLSCA    string        `yaml:"redis_tls_ca_file"` // PEM CA(s) to verify it with; empty: the system's roots
	LeaderTTL     time.Duration `yaml:"leader_ttl"`        // planner lock lease: a standby takes over within about this, default 10s
}

// SchedulerConfig configures lsm (see lsm.Config); zero values keep
// lsm.DefaultConfig's.
type SchedulerConfig struct {
	Policy            string        `yaml:"policy"`             // lall (default), rr, wrr, lc, wlc, sed, nq, lblc, lblcr, dh, sh, mh, twos, lard, lard/r, chbl
	A                 float64       `yaml:"a"`                  // load formula: weight of a session that needs a fill
	B                 float64       `yaml:"b"`                  // load formula: overload penalty above the normal limit
	Normal            float64       `yaml:"normal"`             // normal utilization limit Ul, (0, 1]
	Overload          float64       `yaml:"overload"`           // utilization at which a holder is passed over, (0, 1]
	DiskPressure      float64       `yaml:"disk_pressure"`      // lall: cost of a fill per unit of disk share in use
	FillRefBps        int64         `yaml:"fill_ref_bps"`       // lall: reference session of the fill charge, bit/s (default 4000000)
	HeartbeatInterval time.Duration `yaml:"heartbeat_interval"` // default 1s
	MissedHeartbeats  int           `yaml:"missed_heartbeats"`  // default 3
	SlowStart         time.Duration `yaml:"slow_start"`         // ramp window of a node that joins or returns
	SlowStartFloor    float64       `yaml:"slow_start_floor"`   // share of capacity at the start of the ramp
	LARDLow           float64       `yaml:"lard_low"`           // lard T_low, utilization
	LARDHigh          float64       `yaml:"lard_high"`          // lard T_high, utilization
	CHBLFactor        float64       `yaml:"chbl_factor"`        // chbl balance factor c > 1
}

// StorageConfig configures smm in the manager; zero values keep smm's and
// acm's defaults.
type StorageConfig struct {
	Policy            string        `yaml:"policy"`             // eviction/storage policy: gdsf (default), gdsf-classic, lru, lfu, w-tinylfu
	Eviction          string        `yaml:"eviction"`           // older name of policy
	Planner           string        `yaml:"planner"`            // replicate (default) or none (fills on demand only)
	PlanInterval      time.Duration `yaml:"plan_interval"`      // how often the planner runs, default 30s
	FirstPlanWait     time.Duration `yaml:"first_plan_wait"`    // after a restart or a takeover, how long the first plan waits at most for the nodes of the restored plan to register, default 3m
	OriginChannels    int           `yaml:"origin_channels"`    // the origin's concurrent transfers: the planner's budget and, when set, a limit on fills (a viewer waits in the queue for one)
	HalfLife          time.Duration `yaml:"half_life"`          // popularity half-life for demand and replica counts
	TargetUtilization float64       `yaml:"target_utilization"` // share of a node's egress expected demand may take
	OffPeakStart      time.Duration `yaml:"off_peak_start"`     // preferred prefetch window, time of day (e.g. 2h)
	OffPeakEnd        time.Duration `yaml:"off_peak_end"`       // end of that window (e.g. 8h)
	MaxFillsPerNode   int           `yaml:"max_fills_per_node"` // fills in progress per node when a prefetch is ordered
	RetryBase         time.Duration `yaml:"retry_base"`         // backoff of a failed prefetch: first step
	RetryMax          time.Duration `yaml:"retry_max"`          // backoff cap
	EvictHold         time.Duration `yaml:"evict_hold"`         // an operator's eviction keeps the title off that node in the plan this long, and an operator's prefetch keeps its copy this long once filled; default 1h
	WithdrawnGrace    time.Duration `yaml:"withdrawn_grace"`    // a node's copy of a title withdrawn at the origin is evicted this long after it is first seen so (once no one plays it), default 1h; -1s = never
}

// NodeConfig configures `vodcluster node`.
type NodeConfig struct {
	ID              string        `yaml:"id"`
	DataDir         string        `yaml:"data_dir"`
	RTSPListen      string        `yaml:"rtsp_listen"`         // default ":8555"
	HTTPListen      string        `yaml:"http_listen"`         // default ":8081"
	MetricsListen   string        `yaml:"metrics_listen"`      // Prometheus /metrics; empty: none
	RTPPort         int           `yaml:"rtp_port"`            // even UDP port RTP over UDP is sent from, RTCP on the next; 0 = a free pair at each start
	TCPOnly         bool          `yaml:"tcp_only"`            // RTSP media over TCP only (interleaved): no UDP port, 461 to a SETUP offering only UDP (players set up again over TCP)
	AdvertiseHost   string        `yaml:"advertise_host"`      // host clients are redirected to
	Manager         string        `yaml:"manager"`             // manager gRPC host:port
	Origin          string        `yaml:"origin"`              // CDP gRPC host:port
	ManagerTLS      bool          `yaml:"manager_tls"`         // TLS to the manager, its certificate verified for manager's host
	ManagerTLSCA    string        `yaml:"manager_tls_ca_file"` // PEM CA(s) to verify it with (implies manager_tls); empty: the system's roots
	OriginTLS       bool          `yaml:"origin_tls"`          // TLS to the origin, as for the manager
	OriginTLSCA     string        `yaml:"origin_tls_ca_file"`  // PEM CA(s) for the origin (implies origin_tls)
	SecretFile      string        `yaml:"secret_file"`
	Site            string        `yaml:"site"`               // the operator's site (point of presence) of the node: viewers of its client prefixes (manager.sites) come here first
	HTTPTLSCert     string        `yaml:"http_tls_cert_file"` // PEM certificate chain of the node's HTTP (for its advertise_host's name); with http_tls_key_file it speaks HTTPS only, and viewers are redirected to https://
	HTTPTLSKey      string        `yaml:"http_tls_key_file"`  // its PEM private key
	RTSPTLSCert     string        `yaml:"rtsp_tls_cert_file"` // PEM certificate chain of an RTSPS listener (for its advertise_host's name) beside the plain RTSP one, where viewers that came to the front door over RTSPS are sent; with rtsp_tls_key_file
	RTSPTLSKey      string        `yaml:"rtsp_tls_key_file"`  // its PEM private key
	RTSPSListen     string        `yaml:"rtsps_listen"`       // RTSPS, default ":8323" (with rtsp_tls_cert_file)
	EgressBps       int64         `yaml:"egress_bps"`         // bit/s admission may reserve; 0 (or left out) = 1 Gbit/s; negative is an error
	MaxSessions     int           `yaml:"max_sessions"`       // 0 = bounded by egress only; negative is an error
	DiskBytes       int64         `yaml:"disk_bytes"`         // bytes for titles; 0 (or left out) = 100 GB; negative is an error
	Weight          int           `yaml:"weight"`             // 0 (or left out) = 100; negative or above 65535 (lsm.MaxWeight) is an error
	SessionTimeout  time.Duration `yaml:"session_timeout"`    // 0 (or left out) = 60s; negative is an error
	PauseTimeout    time.Duration `yaml:"pause_timeout"`      // a paused viewer's session (HTTP with no request, RTSP after PAUSE) lives this long without a word: the longest pause that resumes; 0 (or left out) = 5m, never below session_timeout; negative is an error
	Eviction        string        `yaml:"eviction"`           // local eviction policy when a fill needs room
	FillRetryFor    time.Duration `yaml:"fill_retry_for"`     // a fill the origin interrupts is retried until it sent nothing this long; default 30s
	MaxConnsPerAddr int           `yaml:"max_conns_per_addr"` // open connections (RTSP, RTSPS, HTTP) of one client address (IPv6: /64), then answered 503 (closed bare on RTSPS/HTTPS) and closed at accept, default 256; -1 = no limit
	OriginRanges    int           `yaml:"origin_ranges"`      // origin reads of what viewers ask for far ahead of their title's fill open at a time (an HTTP player's probe of the title's end; a resume far into it over HTTP or RTSP), each preemptible by fills; 0 (or left out) = 1; -1 = none (such ranges wait for the fill); below -1 is an error

	file *yamlcfg.File // the --config file it was read from (nil: none), for validate's messages: a value as written, at its line
}

// CDPConfig configures `vodcluster cdp`.
type CDPConfig struct {
	Dir             string        `yaml:"dir"`                   // titles (+ catalog.yaml)
	Listen          string        `yaml:"listen"`                // default ":9100"
	MetricsListen   string        `yaml:"metrics_listen"`        // Prometheus /metrics; empty: none
	SetupDelay      time.Duration `yaml:"setup_delay"`           // per transfer
	MaxTransfers    int           `yaml:"max_transfers"`         // concurrent channels, 0 = unlimited
	TransferRateBps int64         `yaml:"transfer_rate_bps"`     // per transfer, 0 = unlimited
	ChunkBytes      int           `yaml:"chunk_bytes"`           // bytes per streamed chunk: a multiple of 188 up to 1048576; 0 (or left out) = 65424 (348 TS packets, about 64 KiB)
	CatalogPoll     time.Duration `yaml:"catalog_poll_interval"` // how often dir is looked at for new, removed or replaced titles (then read again without a restart), default 5s; -1s = never (SIGHUP only)
	TLSCert         string        `yaml:"tls_cert_file"`         // PEM certificate chain of the gRPC server; with tls_key_file: TLS
	TLSKey          string        `yaml:"tls_key_file"`          // its PEM private key
	SecretFile      string        `yaml:"secret_file"`           // the cluster secret (the manager's and nodes' secret_file): every Origin call must then carry the credential derived from it; empty: the origin answers anyone who reaches it

	file *yamlcfg.File // the --config file it was read from (nil: none), for validate's messages: a value as written, at its line
}

// loadConfig reads path (strict YAML: unknown keys, and a second document
// after ---, are errors; a trailing --- alone is not). An empty path
// gives the zero Config. Errors are "--config PATH: line N: ..." in the
// configuration's words (yamlcfg.Decode): a duration's quote it as
// written with the key within its section ("store.leader_ttl"), the
// others name the key alone ("egress_bps").
func loadConfig(path string) (*Config, error) {
	var c Config
	if path == "" {
		return &c, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fileflag.Error("config", path, err)
	}
	f, err := yamlcfg.Decode(b, &c, yamlcfg.Options{DurationKey: keyInSection, Key: lastKey})
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	c.Manager.file, c.Node.file, c.CDP.file = f, f, f
	if f.Doc != nil && len(f.Doc.Content) > 0 && f.Doc.Content[0].Kind == yaml.MappingNode {
		keys := f.Doc.Content[0].Content
		for i := 0; i+1 < len(keys); i += 2 {
			c.sections = append(c.sections, keys[i].Value)
		}
	}
	c.path = path
	return &c, nil
}

// keyInSection names the key at path ("manager.store.leader_ttl") by its
// path within its section ("store.leader_ttl"), as validate's messages
// name a duration.
func keyInSection(path string) string {
	if _, key, ok := strings.Cut(path, "."); ok {
		return key
	}
	return path
}

// lastKey names the key at path by its last key ("egress_bps" of
// "node.egress_bps").
func lastKey(path string) string {
	return strings.TrimSuffix(path[strings.LastIndexByte(path, '.')+1:], "[]")
}

// readSecret reads a cluster secret file: hex, or raw bytes when not hex;
// at least 16 bytes.
func readSecret(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("secret_file is required (the token key shared by manager and nodes)")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secret_file: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if h, err := hex.DecodeString(s); err == nil && len(h) >= 16 {
		return h, nil
	}
	if len(s) < 16 {
		return nil, fmt.Errorf("secret_file %s: %d bytes, need at least 16 (openssl rand -hex 32 > %s)", path, len(s), path)
	}
	return []byte(s), nil
}

func orString(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func orDuration(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}

// serverTLS returns the gRPC server credentials of a certificate and key
// pair named by the keys certKey and keyKey: nil (plaintext) when both
// are empty. Errors name the keys.
func serverTLS(certKey, cert, keyKey, key string) (credentials.TransportCredentials, error) {
	c, err := serverTLSConfig(certKey, cert, keyKey, key)
	if c == nil || err != nil {
		return nil, err
	}
	return credentials.NewTLS(c), nil
}

// httpsTLS returns the HTTPS configuration of the keys certKey and keyKey
// (a certificate reloaded when renewed), nil when neither is set. Errors
// name the keys.
func httpsTLS(certKey, cert, keyKey, key string) (*tls.Config, error) {
	return serverTLSConfig(certKey, cert, keyKey, key)
}

// serverTLSConfig is the TLS server configuration of the pair named by
// certKey and keyKey (grpctls.ServerConfig), nil when neither is set.
// Errors name the keys.
func serverTLSConfig(certKey, cert, keyKey, key string) (*tls.Config, error) {
	if cert == "" && key == "" {
		return nil, nil
	}
	if cert == "" || key == "" {
		return nil, fmt.Errorf("%s and %s go together (TLS needs both)", certKey, keyKey)
	}
	c, err := grpctls.ServerConfig(cert, key)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", certKey, keyKey, err)
	}
	return c, nil
}

// clientTLS returns the gRPC client credentials of a link configured by
// the keys prefix+"_tls" and prefix+"_tls_ca_file": plaintext unless on
// or caFile is set. Errors name the key.
func clientTLS(prefix string, on bool, caFile string) (credentials.TransportCredentials, error) {
	c, err := grpctls.Client(on || caFile != "", caFile)
	if err != nil {
		return nil, fmt.Errorf("%s_tls_ca_file: %w", prefix, err)
	}
	return c, nil
}
