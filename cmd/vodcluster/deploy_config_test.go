package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"vodcluster/acm"
	"vodcluster/acm/boss"
)

// deployConfigDirs hold the example configurations shipped in deploy/.
var deployConfigDirs = []string{
	filepath.Join("..", "..", "deploy", "config"),
	filepath.Join("..", "..", "deploy", "k8s", "config"),
}

// Every example configuration shipped in deploy/ loads and passes every
// check its process makes before it binds a port: the values of each
// section (validate), and, with the files it names replaced by test ones,
// the manager's store opening, the node's and the origin's own checks. A
// new file in those directories must be one of the known kinds.
func TestDeployExamplesValid(t *testing.T) {
	var users *boss.File
	if u, err := boss.LoadFile(filepath.Join(deployConfigDirs[0], "users.yaml")); err != nil {
		t.Fatal(err)
	} else {
		users = u
	}
	checked := 0
	for _, dir := range deployConfigDirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no example (%v)", dir, err)
		}
		for _, f := range files {
			switch filepath.Base(f) {
			case "users.yaml": // loaded above
				continue
			case "catalog.yaml": // the origin's catalog: cdp's TestDeployCatalogExample
				continue
			}
			t.Run(strings.TrimPrefix(f, filepath.Join("..", "..")+string(filepath.Separator)), func(t *testing.T) {
				checkExampleConfig(t, f, users)
			})
			checked++
		}
	}
	if checked < 6 {
		t.Fatalf("checked %d example configs, want the manager, node and cdp ones of deploy/config and deploy/k8s/config", checked)
	}
}

// checkExampleConfig checks one example configuration file: each section
// it holds.
func checkExampleConfig(t *testing.T, path string, users *boss.File) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]yaml.Node
	if err := yaml.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	if len(top) == 0 {
		t.Fatal("no section")
	}
	c, err := loadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	secret := filepath.Join(tmp, "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("ab", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	for section := range top {
		switch section {
		case "manager":
			m := c.Manager
			if err := m.validate(); err != nil {
				t.Fatalf("manager: %v", err)
			}
			if realm := orString(m.Realm, acm.DefaultRealm); realm != users.Realm() {
				t.Fatalf("manager realm %q, example users.yaml's %q", realm, users.Realm())
			}
			if m.Store.Backend != "" && m.Store.Backend != "badger" {
				t.Fatalf("store.backend %q: the example is checked with badger only", m.Store.Backend)
			}
			for _, f := range []string{m.SecretFile, m.UsersFile, m.AdminTokenFile} {
				if f == "" || !filepath.IsAbs(f) {
					t.Fatalf("manager: file %q: want an absolute path", f)
				}
			}
			m.SecretFile, m.UsersFile = secret, filepath.Join(deployConfigDirs[0], "users.yaml")
			m.AdminTokenFile = secret // 64 characters
			m.DataDir = filepath.Join(tmp, "manager")
			p, err := newManager(m)
			if err != nil {
				t.Fatalf("manager: %v", err)
			}
			if err := p.Close(); err != nil {
				t.Fatalf("manager: close: %v", err)
			}
		case "node":
			n := c.Node
			if err := n.validate(); err != nil {
				t.Fatalf("node: %v", err)
			}
			if n.ID == "" || n.DataDir == "" || n.Manager == "" || n.Origin == "" || n.AdvertiseHost == "" {
				t.Fatalf("node: id, data_dir, manager, origin and advertise_host are needed: %+v", n)
			}
			if err := n.checkAdvertised(); err != nil { // vodcluster node's check before newNode
				t.Fatalf("node: %v", err)
			}
			n.SecretFile = secret
			node, err := newNode(n)
			if err != nil {
				t.Fatalf("node: %v", err)
			}
			if node.MaxConnsPerAddr != n.MaxConnsPerAddr {
				t.Fatalf("node: max_conns_per_addr %d, the node's %d", n.MaxConnsPerAddr, node.MaxConnsPerAddr)
			}
		case "cdp":
			if err := c.CDP.validate(); err != nil {
				t.Fatalf("cdp: %v", err)
			}
			if f := c.CDP.SecretFile; f == "" || !filepath.IsAbs(f) {
				t.Fatalf("cdp: secret_file %q: want an absolute path (the origin asks for the cluster's credential)", f)
			}
			c.CDP.SecretFile = secret
			s, err := newCDP(c.CDP)
			if err != nil {
				t.Fatalf("cdp: %v", err)
			}
			if err := s.Validate(); err != nil {
				t.Fatalf("cdp: %v", err)
			}
		default:
			t.Fatalf("unknown section %q", section)
		}
	}
}

// Each section's check names the key of a bad value, and reports every
// bad key at once.
func TestConfigValidateNamesKeys(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want []string
	}{
		{"cdp chunk", CDPConfig{Dir: "d", ChunkBytes: 65536}.validate(), []string{"chunk_bytes 65536", "multiple of 188"}},
		{"cdp negatives", CDPConfig{Dir: "d", SetupDelay: -1, MaxTransfers: -1, TransferRateBps: -1}.validate(),
			[]string{"setup_delay -1ns", "max_transfers -1", "transfer_rate_bps -1"}},
		{"cdp dir", CDPConfig{}.validate(), []string{"dir is required"}},
		{"cdp catalog poll", CDPConfig{Dir: "d", CatalogPoll: 10 * time.Millisecond}.validate(), []string{"catalog_poll_interval 10ms: want 1s or more"}},
		// -1s is SIGHUP only; another negative stopped every look at the directory without a word
		{"cdp catalog poll -2s", CDPConfig{Dir: "d", CatalogPoll: -2 * time.Second}.validate(), []string{"catalog_poll_interval -2s: want 1s or more", "-1s to read the directory on SIGHUP only"}},
		{"cdp catalog poll -1ns", CDPConfig{Dir: "d", CatalogPoll: -1}.validate(), []string{"catalog_poll_interval -1ns: want 1s or more"}},
		{"node negatives", NodeConfig{DiskBytes: -5, EgressBps: -1, MaxSessions: -2, Weight: -3, SessionTimeout: -1, PauseTimeout: -1, FillRetryFor: -1}.validate(),
			[]string{"disk_bytes -5: negative", "egress_bps -1: negative", "max_sessions -2", "weight -3", "session_timeout -1ns", "pause_timeout -1ns", "fill_retry_for -1ns"}},
		{"node origin ranges", NodeConfig{OriginRanges: -2}.validate(), []string{"origin_ranges -2: want 1 or more, 0 for the default (1), or -1 for none"}},
		{"node rtsps_listen without a certificate", NodeConfig{RTSPSListen: ":8323"}.validate(), []string{"rtsps_listen :8323: needs rtsp_tls_cert_file and rtsp_tls_key_file"}},
		{"manager rtsps_listen without a certificate", ManagerConfig{RTSPSListen: ":8322"}.validate(), []string{"rtsps_listen :8322: needs rtsp_tls_cert_file and rtsp_tls_key_file"}},
		{"manager withdrawn grace", ManagerConfig{Storage: StorageConfig{WithdrawnGrace: -time.Minute}}.validate(), []string{"storage.withdrawn_grace -1m: want a duration, 0 (or leave it out) for 1h, or -1s for never"}},
		{"node connections per address", NodeConfig{MaxConnsPerAddr: -2}.validate(), []string{"max_conns_per_addr -2: give a positive number, -1 for no limit"}},
		{"node weight range", NodeConfig{Weight: 1 << 31}.validate(), []string{"weight 2147483648: above 65535, the largest IPVS weight"}},
		{"node weight above IPVS's", NodeConfig{Weight: 65536}.validate(), []string{"weight 65536: above 65535"}},
		{"node eviction", NodeConfig{Eviction: "fifo"}.validate(), []string{"eviction: ", "fifo"}},
		// gRPC dialled port 443 of a bare host, "connection refused" for ever
		{"node addresses without a port", NodeConfig{Manager: "192.0.2.10", Origin: "cdp.vod.example.net:99999"}.validate(),
			[]string{`manager "192.0.2.10": want HOST:PORT, the manager's grpc_listen`, `origin "cdp.vod.example.net:99999": want HOST:PORT`}},
		{"manager origin without a port", ManagerConfig{Origin: "cdp.vod.example.net"}.validate(),
			[]string{`origin "cdp.vod.example.net": want HOST:PORT, the origin's listen`}},
		{"manager durations", ManagerConfig{TokenTTL: -5e9, QueueDeadline: -1, RestoreGrace: -1, LoginRefill: -1, RequestRefill: -1, CatalogRefresh: -1}.validate(),
			[]string{"token_ttl -5s: negative", "queue_deadline -1ns", "restore_grace -1ns", "login_failure_refill -1ns", "request_refill -1ns", "catalog_refresh -1ns"}},
		{"manager storage", ManagerConfig{Storage: StorageConfig{OriginChannels: -1, PlanInterval: -1, FirstPlanWait: -1, RetryBase: -1}}.validate(),
			[]string{"storage.origin_channels -1: negative", "storage.plan_interval -1ns", "storage.first_plan_wait -1ns", "storage.retry_base -1ns"}},
		{"manager scheduler", ManagerConfig{Scheduler: SchedulerConfig{A: -1, MissedHeartbeats: -1, HeartbeatInterval: -1}}.validate(),
			[]string{"scheduler.a -1", "scheduler.missed_heartbeats -1", "scheduler.heartbeat_interval -1ns"}},
		{"manager limits", ManagerConfig{MaxSessions: -2, LoginFailures: -5, LoginPerUser: -2, RequestsPerUser: -3}.validate(),
			[]string{"max_sessions_per_user -2", "login_failures -5", "login_failures_per_user -2: give a positive number, -1 for no limit, or 0 (or leave it out) for ten times login_failures", "requests_per_user -3: give a positive number, -1 for no limit"}},
		{"manager store", ManagerConfig{Store: StoreConfig{LeaderTTL: -1, RedisDB: -1}}.validate(),
			[]string{"store.leader_ttl -1ns", "store.redis_db -1"}},
		{"manager policy", ManagerConfig{Scheduler: SchedulerConfig{Policy: "nope"}}.validate(), []string{"scheduler.policy nope: ", "nope"}},
		{"manager storage policy", ManagerConfig{Storage: StorageConfig{Policy: "nope"}}.validate(), []string{"storage.policy nope: ", "nope"}},
		{"manager token ttl", ManagerConfig{TokenTTL: time.Millisecond}.validate(), []string{"token_ttl 1ms: at least 1s"}},
		// nodes report in whole milliseconds: at 1ns each was dead 3 ns after each report
		{"manager heartbeat 1ns", ManagerConfig{Scheduler: SchedulerConfig{HeartbeatInterval: 1}}.validate(),
			[]string{"scheduler.heartbeat_interval 1ns: at least 100ms"}},
		{"manager heartbeat 1ms", ManagerConfig{Scheduler: SchedulerConfig{HeartbeatInterval: time.Millisecond}}.validate(),
			[]string{"scheduler.heartbeat_interval 1ms: at least 100ms"}},
		{"manager policy and eviction", ManagerConfig{Storage: StorageConfig{Policy: "gdsf", Eviction: "bogus"}}.validate(),
			[]string{`storage.policy "gdsf" and storage.eviction "bogus"`}},
		{"manager store timeout negative", ManagerConfig{StoreTimeout: -time.Second}.validate(),
			[]string{"store_timeout -1s: negative", "0 (or leave it out) for 2s"}},
		// a working store taking 2 ms now and then would refuse every request until its next health check
		{"manager store timeout 1ms", ManagerConfig{StoreTimeout: time.Millisecond}.validate(),
			[]string{"store_timeout 1ms: at least 100ms"}},
	}
	for _, c := range cases {
		if c.err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(c.err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.name, c.err, w)
			}
		}
	}
	// What -1 means ("no limit") and the zero values (defaults) stay valid.
	for _, err := range []error{
		ManagerConfig{MaxSessions: -1, LoginFailures: -1, RequestsPerUser: -1}.validate(), ManagerConfig{}.validate(),
		ManagerConfig{Scheduler: SchedulerConfig{HeartbeatInterval: 100 * time.Millisecond}}.validate(),
		ManagerConfig{StoreTimeout: 100 * time.Millisecond}.validate(), ManagerConfig{StoreTimeout: 5 * time.Second}.validate(),
		NodeConfig{}.validate(), CDPConfig{Dir: "d"}.validate(),
		NodeConfig{Manager: "[2001:db8::7]:9090", Origin: ":9100"}.validate(), ManagerConfig{Origin: "cdp.vod.example.net:9100"}.validate(), CDPConfig{Dir: "d", CatalogPoll: -time.Second}.validate(),
	} {
		if err != nil {
			t.Errorf("valid section refused: %v", err)
		}
	}
}

// A bad value stops newNode and newManager before they read any file or
// open the store: disk_bytes -5 no longer reaches the manager as a
// registration it refuses forever.
func TestNegativeValuesStopStart(t *testing.T) {
	if _, err := newNode(NodeConfig{DiskBytes: -5, SecretFile: "/nonexistent"}); err == nil ||
		!strings.Contains(err.Error(), "disk_bytes -5") {
		t.Fatalf("node disk_bytes -5: %v", err)
	}
	if _, err := newNode(NodeConfig{EgressBps: -1, SecretFile: "/nonexistent"}); err == nil ||
		!strings.Contains(err.Error(), "egress_bps -1") {
		t.Fatalf("node egress_bps -1: %v", err)
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte(strings.Repeat("ab", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := newNode(NodeConfig{SecretFile: key})
	if err != nil {
		t.Fatal(err)
	}
	if n.Capacity.EgressBps != defaultNodeEgressBps || n.Capacity.DiskBytes != defaultNodeDiskBytes {
		t.Fatalf("0 is not the documented default: %+v", n.Capacity)
	}
	f := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(f, []byte("manager:\n  token_ttl: -5s\n  storage:\n    origin_channels: -1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := loadConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	_, err = newManager(c.Manager)
	if err == nil || !strings.Contains(err.Error(), "token_ttl -5s") || !strings.Contains(err.Error(), "storage.origin_channels -1") {
		t.Fatalf("manager token_ttl -5s, origin_channels -1: %v", err)
	}
}
