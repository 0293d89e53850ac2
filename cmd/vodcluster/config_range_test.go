package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigRangeErrorsAtTheirLine: a whole number or ratio of the
// configuration file out of range was refused without its line
// ("max_sessions -1: negative ...", "weight 70000: above 65535 ..."),
// while a duration's error named it; it now says the line and the value
// as written (-01, not -1), through an alias at its use, as a duration's.
func TestConfigRangeErrorsAtTheirLine(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ yaml, want string }{
		{"node:\n  id: a\n  max_sessions: -01\n", "line 3: max_sessions -01: negative; give a positive number"},
		{"node:\n  max_sessions: 3000000000\n", "line 2: max_sessions 3000000000: above the largest allowed, 2147483647"},
		{"node:\n  weight: 70000\n", "line 2: weight 70000: above 65535, the largest IPVS weight"},
		{"node:\n  rtp_port: 5001\n", "line 2: rtp_port 5001: want an even port"},
		{"node:\n  tcp_only: true\n  rtp_port: 6970\n", "line 3: rtp_port 6970: a node with tcp_only opens no UDP port"},
		{"manager:\n  max_sessions_per_user: -2\n", "line 2: max_sessions_per_user -2: give a positive number, -1 for no limit"},
		{"manager:\n  scheduler:\n    fill_ref_bps: &n -5\n  storage:\n    origin_channels: *n\n", "line 5: storage.origin_channels -5: negative"},
		{"manager:\n  storage:\n    target_utilization: -0.50\n", "line 3: storage.target_utilization -0.50: negative"},
		{"cdp:\n  dir: d\n  chunk_bytes: 1000\n", "line 3: chunk_bytes 1000: want a multiple of 188"},
	} {
		p := filepath.Join(dir, "c.yaml")
		os.WriteFile(p, []byte(c.yaml), 0o600)
		cfg, err := loadConfig(p)
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		var got []string
		for _, e := range []error{cfg.Manager.validate(), cfg.Node.validate(), cfg.CDP.validate()} {
			if e != nil {
				got = append(got, e.Error())
			}
		}
		if !strings.Contains(strings.Join(got, "\n"), c.want) {
			t.Errorf("%q: %q, want %q", c.yaml, got, c.want)
		}
	}
	// A value not from a file (no --config): no line.
	if err := (NodeConfig{MaxSessions: -1}).validate(); err == nil || !strings.Contains(err.Error(), "max_sessions -1: negative") || strings.Contains(err.Error(), "line ") {
		t.Errorf("without a file: %v", err)
	}
}
