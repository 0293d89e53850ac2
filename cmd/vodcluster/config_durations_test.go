package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConfigDurationsAsWritten: an error about a duration of the
// configuration file quoted it in Go's form ("session_timeout 9.999s"
// for 9999ms, "token_ttl -24h0m0s" for -24h), without the line; it now
// quotes what the file says, at its line, through aliases and merge
// keys, and a limit readably.
func TestConfigDurationsAsWritten(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		yaml string
		want []string
	}{
		{"node:\n  id: a\n  session_timeout: 9999ms\n", []string{"line 3: session_timeout 9999ms: at least 10s (60s by default)"}},
		{"node:\n  pause_timeout: -1d\n", []string{"line 2: pause_timeout -1d: negative"}},
		{"manager:\n  token_ttl: 500ms\n  store:\n    leader_ttl: -90m\n", []string{"line 2: token_ttl 500ms: at least 1s", "line 4: store.leader_ttl -90m: negative"}},
		{"manager:\n  scheduler:\n    heartbeat_interval: 0.05s\n", []string{"line 3: scheduler.heartbeat_interval 0.05s: at least 100ms"}},
		{"manager:\n  catalog_refresh: &short 500ms\n  storage:\n    plan_interval: *short\n", []string{"line 2: catalog_refresh 500ms: at least 1s", "line 4: storage.plan_interval 500ms: at least 1s"}},
		{"manager:\n  subscriber_tokens:\n    secret_file: s\n    leeway: 1d\n", []string{"line 4: subscriber_tokens.leeway 1d: at most 5m (30s by default)"}},
		{"cdp:\n  dir: d\n  <<: {catalog_poll_interval: 100ms}\n", []string{"line 3: catalog_poll_interval 100ms: want 1s or more", "for 5s"}},
		{"manager:\n  store:\n    backend: redis\n    redis_addr: 127.0.0.1:6379\n    leader_ttl: 0.01s\n", []string{"line 5: store.leader_ttl 0.01s: at least 30ms (10s by default)"}},
		// the store's own refusal named no key
		{"manager:\n  store:\n    backend: redis\n", []string{"line 3: store.backend redis: store.redis_addr is required"}},
	} {
		p := filepath.Join(dir, "c.yaml")
		os.WriteFile(p, []byte(c.yaml), 0o600)
		cfg, err := loadConfig(p)
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		errs := []error{cfg.Manager.validate(), cfg.Node.validate()}
		if strings.HasPrefix(c.yaml, "cdp:") {
			errs = append(errs, cfg.CDP.validate())
		}
		var got []string
		for _, e := range errs {
			if e != nil {
				got = append(got, e.Error())
			}
		}
		for _, w := range c.want {
			if !strings.Contains(strings.Join(got, "\n"), w) {
				t.Errorf("%q: %q, want %q", c.yaml, got, w)
			}
		}
	}
	// Not read from a file: readable, not Go's "-24h0m0s".
	if err := (ManagerConfig{TokenTTL: -24 * time.Hour}).validate(); err == nil || !strings.Contains(err.Error(), "token_ttl -24h: negative") {
		t.Errorf("token_ttl -24h: %v", err)
	}
}

// TestConfigDurationsInDays: the duration flags take days (--for 7d),
// the configuration file's durations did not ("`2d` is not a
// duration"); they do now, in an alias, a merge key and with hours
// after them (beside a bare 0, the default), and a duration that is
// none is named with its key.
func TestConfigDurationsInDays(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("manager:\n  storage:\n    evict_hold: &two 2d\n    half_life: 1d12h\n  token_ttl: 90s\nnode:\n  <<: {fill_retry_for: 1d}\n  pause_timeout: *two\n  session_timeout: \"60s\"\ncdp:\n  setup_delay: 0\n"), 0o600)
	c, err := loadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Manager.Storage.EvictHold != 48*time.Hour || c.Manager.Storage.HalfLife != 36*time.Hour || c.Manager.TokenTTL != 90*time.Second ||
		c.Node.FillRetryFor != 24*time.Hour || c.Node.PauseTimeout != 48*time.Hour || c.Node.SessionTimeout != time.Minute || c.CDP.SetupDelay != 0 {
		t.Fatalf("durations in days: %+v %+v", c.Manager, c.Node)
	}
	if err := c.Manager.validate(); err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct{ yaml, want string }{
		{"node:\n  session_timeout: 1x\n", "line 2: session_timeout 1x: not a duration: write it with its unit, like 60s, 5m, 3h or 7d (days)"},
		{"node:\n  session_timeout: 1d-1h\n", "line 2: session_timeout 1d-1h: not a duration"},
		{"manager:\n  store:\n    leader_ttl: 999999999d\n", "line 3: store.leader_ttl 999999999d: too long: at most 106751 days (about 292 years)"},
		{"node:\n  session_timeout: 106752d\n", "line 2: session_timeout 106752d: too long: at most 106751 days"},
		{"node:\n  session_timeout: 106751d24h\n", "line 2: session_timeout 106751d24h: too long: at most 106751 days"},
		{"node:\n  egres_bps: 5\n  pause_timeout: 3\n", "unknown key egres_bps"},
		{"node:\n  egres_bps: 5\n  pause_timeout: 3\n", "line 3: pause_timeout 3: not a duration"},
	} {
		os.WriteFile(p, []byte(b.yaml), 0o600)
		if _, err := loadConfig(p); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%q: %v, want %q", b.yaml, err, b.want)
		}
	}
}

// A bare 0 anchored at a duration and used again by its alias for a
// whole number (session_timeout: &z 0, egress_bps: *z) was taken before
// yamlcfg; then the duration's 0 was written again as "0s" for both
// uses: "`0s` is not a whole number", the key not named.
func TestConfigDurationZeroAliasedAsNumber(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("node:\n  session_timeout: &z 0\n  egress_bps: *z\n  max_sessions: *z\n"), 0o600)
	c, err := loadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Node.SessionTimeout != 0 || c.Node.EgressBps != 0 {
		t.Fatalf("node %+v", c.Node)
	}
}
