package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

func TestConfigStrict(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("node:\n  id: a\n  egres_bps: 5\n"), 0o600)
	if _, err := loadConfig(bad); err == nil || !strings.Contains(err.Error(), "line 3: unknown key egres_bps") {
		t.Fatalf("unknown key accepted or not named: %v", err)
	}
	dur := filepath.Join(dir, "dur.yaml")
	os.WriteFile(dur, []byte("manager:\n  token_ttl: 60\n  restore_grace: soon\n"), 0o600)
	if _, err := loadConfig(dur); err == nil || !strings.Contains(err.Error(), "line 2: token_ttl 60: not a duration") ||
		!strings.Contains(err.Error(), "line 3: restore_grace soon: not a duration") {
		t.Fatalf("durations without a unit: %v", err)
	}
	// A bare 0, as the example configurations' "0 or left out" reads, is
	// the default; it was refused as "`0` is not a duration".
	zero := filepath.Join(dir, "zero.yaml")
	os.WriteFile(zero, []byte("manager:\n  token_ttl: 0\nnode:\n  session_timeout: 0\n  pause_timeout: 0s\n"), 0o600)
	if c, err := loadConfig(zero); err != nil || c.Manager.TokenTTL != 0 || c.Node.SessionTimeout != 0 {
		t.Fatalf("durations written 0: %v %+v", err, c)
	}
	os.WriteFile(zero, []byte("manager:\n  token_ttl: 0\n  restore_grace: 60\n"), 0o600)
	if _, err := loadConfig(zero); err == nil || !strings.Contains(err.Error(), "line 3: restore_grace 60: not a duration") || strings.Contains(err.Error(), "token_ttl") {
		t.Fatalf("a 0 beside a duration without a unit: %v", err)
	}
	tiny := filepath.Join(dir, "tiny")
	os.WriteFile(tiny, []byte("abc\n"), 0o600)
	if _, err := newManager(ManagerConfig{SecretFile: tiny}); err == nil || !strings.Contains(err.Error(), "secret_file") {
		t.Fatalf("short secret not named by its key: %v", err)
	}
	empty := filepath.Join(dir, "empty.yaml")
	os.WriteFile(empty, nil, 0o600)
	if _, err := loadConfig(empty); err != nil {
		t.Fatalf("empty file: %v", err)
	}
	// A second document would be ignored, its settings with it: refused.
	// A trailing --- alone is no second document.
	two := filepath.Join(dir, "two.yaml")
	os.WriteFile(two, []byte("node:\n  id: a\n---\nnode:\n  id: b\n"), 0o600)
	if _, err := loadConfig(two); err == nil || !strings.Contains(err.Error(), "line 4: a second document") {
		t.Fatalf("second document accepted or not named: %v", err)
	}
	trailing := filepath.Join(dir, "trailing.yaml")
	os.WriteFile(trailing, []byte("node:\n  id: a\n---\n"), 0o600)
	if c, err := loadConfig(trailing); err != nil || c.Node.ID != "a" {
		t.Fatalf("trailing ---: %+v %v", c, err)
	}
	if _, err := readSecret(filepath.Join(dir, "none")); err == nil || !strings.HasPrefix(err.Error(), "secret_file: ") {
		t.Fatalf("missing secret file accepted or its key not named: %v", err)
	}
	key32 := filepath.Join(dir, "key")
	os.WriteFile(key32, []byte(strings.Repeat("ab", 32)), 0o600)
	if _, err := newNode(NodeConfig{SecretFile: key32, RTPPort: 6971}); err == nil || !strings.Contains(err.Error(), "rtp_port 6971") {
		t.Fatalf("odd rtp_port: %v", err)
	}
	if _, err := newManager(ManagerConfig{SecretFile: key32}); err == nil || !strings.Contains(err.Error(), "users_file is required") {
		t.Fatalf("no users file: %v", err)
	}
	if _, err := newManager(ManagerConfig{SecretFile: key32, UsersFile: filepath.Join(dir, "none")}); err == nil ||
		!strings.HasPrefix(err.Error(), "users_file: ") {
		t.Fatalf("missing users file not named by its key: %v", err)
	}
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("abc\n"), 0o600)
	if _, err := readSecret(short); err == nil {
		t.Fatal("short secret accepted")
	}
	key, err := clusterSecret(filepath.Join(dir, "k", "secret"))
	if err != nil || len(key) != 32 {
		t.Fatalf("clusterSecret: %v %d", err, len(key))
	}
	again, err := clusterSecret(filepath.Join(dir, "k", "secret"))
	if err != nil || string(again) != string(key) {
		t.Fatal("clusterSecret not kept across calls")
	}
}

// The scheduler's keys reach lsm.Config, and a bad value is an error of
// Validate, not silently the default.
func TestSchedulerConfigKeys(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "m.yaml")
	os.WriteFile(f, []byte("manager:\n  scheduler:\n    policy: lblc\n    a: 20\n    fill_ref_bps: 8000000\n"), 0o600)
	c, err := loadConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := schedulerConfig(c.Manager.Scheduler)
	if sc.Policy != "lblc" || sc.A != 20 || sc.FillRefBps != 8_000_000 {
		t.Fatalf("scheduler config %+v", sc)
	}
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(f, []byte("manager:\n  scheduler:\n    fill_ref_bps: -1\n"), 0o600)
	if c, err = loadConfig(f); err != nil {
		t.Fatal(err)
	}
	sc = schedulerConfig(c.Manager.Scheduler)
	if err := sc.Validate(); err == nil || !strings.Contains(err.Error(), "fill reference") {
		t.Fatalf("negative fill_ref_bps: %v", err)
	}
	// A holder passed over before the formula sees it loaded: refused.
	os.WriteFile(f, []byte("manager:\n  scheduler:\n    normal: 0.85\n    overload: 0.7\n"), 0o600)
	if c, err = loadConfig(f); err != nil {
		t.Fatal(err)
	}
	sc = schedulerConfig(c.Manager.Scheduler)
	if err := sc.Validate(); err == nil || !strings.Contains(err.Error(), "below the normal utilization limit") {
		t.Fatalf("overload below normal: %v", err)
	}
}

// --log-level and --log-format: the levels slog knows, text or JSON;
// anything else is refused with the flag named; --verbose is debug.
func TestLogFlags(t *testing.T) {
	for _, c := range []struct {
		level, format string
		verbose       bool
		debug, warn   bool // enabled at debug, at info
		err           string
	}{
		{"info", "text", false, false, true, ""},
		{"warn", "json", false, false, false, ""},
		{"WARN", "text", false, false, false, ""},
		{"info", "text", true, true, true, ""},
		{"loud", "text", false, false, false, "--log-level"},
		{"info", "xml", false, false, false, "--log-format"},
	} {
		h, err := logHandler(c.level, c.format, c.verbose)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s/%s: %v, want an error naming %s", c.level, c.format, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s/%s: %v", c.level, c.format, err)
		}
		ctx := context.Background()
		if got := h.Enabled(ctx, slog.LevelDebug); got != c.debug {
			t.Errorf("%s verbose=%v: debug enabled %v", c.level, c.verbose, got)
		}
		if got := h.Enabled(ctx, slog.LevelInfo); got != c.warn {
			t.Errorf("%s: info enabled %v, want %v", c.level, got, c.warn)
		}
	}
}

// Each role refuses a file without its own section, naming the file and
// the sections it has: vodcluster manager --config node.yaml stopped on
// "secret_file is required" while the file held one (under node:).
func TestConfigWithoutTheRolesSection(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	node := write("node.yaml", "node:\n  id: a\n  secret_file: /etc/vodcluster/secret\n")
	cdp := write("cdp.yaml", "cdp:\n  dir: /srv/vodcluster/titles\n")
	both := write("both.yaml", "manager:\n  realm: x\ncdp:\n  dir: /srv\n")
	empty := write("empty.yaml", "# nothing set\n")
	for _, c := range []struct {
		cmd        *cobra.Command
		file, want string
	}{
		{managerCmd(), node, "no manager: section (the file has node:)"},
		{nodeCmd(), cdp, "no node: section (the file has cdp:)"},
		{cdpCmd(), node, "no cdp: section (the file has node:)"},
		{nodeCmd(), both, "no node: section (the file has manager:, cdp:)"},
		{managerCmd(), empty, "no manager: section (the file has nothing)"},
	} {
		c.cmd.SetArgs([]string{"--config", c.file})
		c.cmd.SetOut(io.Discard)
		c.cmd.SetErr(io.Discard)
		err := c.cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.file) {
			t.Errorf("%s --config %s: %v, want %q", c.cmd.Name(), filepath.Base(c.file), err, c.want)
		}
	}
}

// A node whose listener takes every address and that has no
// advertise_host is refused at start, naming the key: it started, and
// the manager refused its registration for as long as it ran, logged as
// "manager link down, retrying" with an rtsp_addr of "[::]:8555".
func TestNodeWithoutAdvertiseHost(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("ab", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct{ listens, want string }{
		{"  rtsp_listen: \":0\"\n  http_listen: \"127.0.0.1:0\"\n", `advertise_host is required: rtsp_listen ":0"`},
		{"  rtsp_listen: \"127.0.0.1:0\"\n  http_listen: \"[::]:0\"\n", `advertise_host is required: http_listen "[::]:0"`},
		{"  rtsp_listen: \"0.0.0.0:0\"\n", `advertise_host is required: rtsp_listen "0.0.0.0:0"`},
		{"  rtsp_listen: \"127.0.0.1:0\"\n  http_listen: \"127.0.0.1:0\"\n  advertise_host: \"::\"\n", `advertise_host "::" means every address`},
	} {
		f := filepath.Join(dir, fmt.Sprintf("node%d.yaml", i))
		body := fmt.Sprintf("node:\n  id: n%d\n  data_dir: %s\n  manager: 127.0.0.1:1\n  origin: 127.0.0.1:1\n  secret_file: %s\n%s",
			i, filepath.Join(dir, fmt.Sprint("data", i)), secret, c.listens)
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := nodeCmd()
		cmd.SetArgs([]string{"--config", f})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		done := make(chan error, 1)
		go func() { done <- cmd.Execute() }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%q: %v, want %q", c.listens, err, c.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q: the node runs (10 s) without a host to announce", c.listens)
		}
	}
	// The RTSPS listener is announced too (rtsps_addr, where viewers that
	// came over RTSPS are sent): by default it takes every address
	// (":8323"); the manager took "[::]:8323" and sent them there.
	rtsps := NodeConfig{RTSPListen: "192.0.2.7:8555", HTTPListen: "192.0.2.7:8081", RTSPTLSCert: "c.pem", RTSPTLSKey: "k.pem"}
	if err := rtsps.checkAdvertised(); err == nil || !strings.Contains(err.Error(), `advertise_host is required: rtsps_listen ":8323"`) {
		t.Errorf("RTSPS on every address: %v", err)
	}
	// advertise_host is a bare host: the node adds each listener's port
	// (it announced "[vod-01:8555]:8555", and the manager took it)
	for _, h := range []string{"vod-01:8555", "[2001:db8::7]", "rtsp://vod-01", "192.0.2.7:8555", "vod 01"} {
		if err := (NodeConfig{AdvertiseHost: h}).checkAdvertised(); err == nil || !strings.Contains(err.Error(), "without port, brackets or scheme") {
			t.Errorf("advertise_host %q: %v", h, err)
		}
	}
	for _, ok := range []NodeConfig{{AdvertiseHost: "vod-01.example.net"}, {RTSPListen: "192.0.2.7:8555", HTTPListen: "192.0.2.7:8081"},
		{AdvertiseHost: "2001:db8::7"}, {AdvertiseHost: "192.0.2.7"}, {AdvertiseHost: "vod-01"},
		{RTSPListen: "192.0.2.7:8555", HTTPListen: "192.0.2.7:8081", RTSPSListen: "192.0.2.7:8323", RTSPTLSCert: "c.pem", RTSPTLSKey: "k.pem"},
		{RTSPTLSCert: "c.pem", RTSPTLSKey: "k.pem", AdvertiseHost: "vod-01.example.net"}} {
		if err := ok.checkAdvertised(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

// TestConfigFractionalInts: a number with a fraction where a whole one is
// wanted was cut without a word by the YAML decoder
// (max_sessions_per_user: 1.5 ran with 1); it is refused, naming line,
// key and value. Whole floats (1e9, 2.0) and float keys stay accepted.
func TestConfigFractionalInts(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("manager:\n  max_sessions_per_user: 1.5\nnode:\n  egress_bps: 1500.5\n"), 0o600)
	_, err := loadConfig(bad)
	if err == nil || !strings.HasPrefix(err.Error(), "--config "+bad+": ") || // as every other error of the file
		!strings.Contains(err.Error(), "line 2: max_sessions_per_user 1.5: want a whole number") ||
		!strings.Contains(err.Error(), "line 4: egress_bps 1500.5: want a whole number") {
		t.Fatalf("fractions in whole-number keys: %v", err)
	}
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("manager:\n  max_sessions_per_user: 2.0\n  scheduler:\n    normal: 0.75\nnode:\n  egress_bps: 1e9\n"), 0o600)
	c, err := loadConfig(good)
	if err != nil || c.Manager.MaxSessions != 2 || c.Node.EgressBps != 1e9 {
		t.Fatalf("whole floats and float keys: %v %+v", err, c)
	}
}

// TestConfigFractionalIntsAliasMerge: a fraction reaching a whole-number
// key through an alias (max_sessions: *half) or a merge key (<<: {...},
// <<: *base, <<: [*a]) was cut by the decoder as a written one was (0.5
// made max_sessions 0, no limit) while the check looked only at values
// written in place; it is refused too, at the line of the alias. Whole
// values brought in so stay accepted.
func TestConfigFractionalIntsAliasMerge(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ yaml, want string }{
		{"manager:\n  scheduler:\n    normal: &half 0.5\nnode:\n  max_sessions: *half\n", "line 5: max_sessions 0.5: want a whole number"},
		{"node:\n  <<: {egress_bps: 1500.5}\n", "line 2: egress_bps 1500.5: want a whole number"},
		{"manager:\n  storage: &st\n    target_utilization: 0.5\ncdp:\n  <<: [{max_transfers: 2.5}]\n", "line 5: max_transfers 2.5: want a whole number"},
		{"manager:\n  sites:\n    - &b {name: x}\n  scheduler:\n    <<: {fill_ref_bps: 1e6, missed_heartbeats: 3.5}\n", "line 5: missed_heartbeats 3.5: want a whole number"},
	} {
		p := filepath.Join(dir, "c.yaml")
		os.WriteFile(p, []byte(tc.yaml), 0o600)
		if _, err := loadConfig(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
	p := filepath.Join(dir, "good.yaml")
	os.WriteFile(p, []byte("manager:\n  max_sessions_per_user: &n 3\n  store:\n    redis_db: *n\nnode: &node\n  <<: {egress_bps: 1e9}\n  max_sessions: *n\n"), 0o600)
	c, err := loadConfig(p)
	if err != nil || c.Manager.MaxSessions != 3 || c.Manager.Store.RedisDB != 3 || c.Node.EgressBps != 1e9 || c.Node.MaxSessions != 3 {
		t.Fatalf("whole values by alias and merge: %v %+v", err, c)
	}
}

// TestConfigFloatOutOfRange: a float beyond an int64 key's range at 2^63
// (9.223372036854775808e18), below -2^63 or -.inf was taken by the
// decoder as -9223372036854775808, the operator told of a negative
// value they had not written (or, in max_sessions_per_user, of one below
// -1); it is refused as out of range, naming what was written.
func TestConfigFloatOutOfRange(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ yaml, want string }{
		{"node:\n  egress_bps: 9.223372036854775808e18\n", "line 2: egress_bps 9.223372036854775808e18: out of range (a whole number from -9223372036854775808 to 9223372036854775807)"},
		{"manager:\n  max_sessions_per_user: -.inf\n", "line 2: max_sessions_per_user -.inf: out of range"},
		{"cdp:\n  transfer_rate_bps: -1e19\n", "line 2: transfer_rate_bps -1e19: out of range"},
		{"cdp:\n  max_transfers: -.INF\n", "line 2: max_transfers -.INF: out of range"},
	} {
		p := filepath.Join(dir, "c.yaml")
		os.WriteFile(p, []byte(tc.yaml), 0o600)
		if _, err := loadConfig(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
	p := filepath.Join(dir, "good.yaml")
	os.WriteFile(p, []byte("node:\n  disk_bytes: 9.2233720368547e18\n  egress_bps: -9.223372036854775808e18\n"), 0o600)
	if c, err := loadConfig(p); err != nil || c.Node.DiskBytes != 9223372036854700032 || c.Node.EgressBps != math.MinInt64 {
		t.Fatalf("floats in range: %v %+v", err, c)
	}
}
