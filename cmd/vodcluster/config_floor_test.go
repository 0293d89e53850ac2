package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `vodcluster node` refuses a session_timeout shorter than players keep
// sessions alive in, naming the key: at 1ms (a typo for 1m) the node
// started without a word and ended every UDP session as it was set up
// (reason timeout), the player receiving nothing; below 10 s, sessions
// kept alive only by RTCP receiver reports (about every 5 s) ended while
// they played. 10s and up, and 0 (the default, 60s), are taken.
func TestNodeRefusesSessionTimeoutTooShort(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("ab", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "node.yaml")
	var cases []refusedConfig
	for _, v := range []string{"1ms", "500ms", "5s", "9.999s", "9999ms"} {
		cases = append(cases, refusedConfig{what: "session_timeout " + v,
			yaml: "node:\n  id: n1\n  data_dir: " + filepath.Join(dir, "data") +
				"\n  rtsp_listen: 127.0.0.1:0\n  http_listen: 127.0.0.1:0\n  secret_file: " + secret +
				"\n  session_timeout: " + v + "\n",
			// The file and the line too, the value as written: the
			// message named the key alone, 9.999s for 9999ms.
			want: "--config " + cfg + ": line 7: session_timeout " + v + ": at least 10s"})
	}
	refusedAtStart(t, "node", cfg, cases)
	for _, d := range []time.Duration{0, 10 * time.Second, time.Minute} {
		if err := (NodeConfig{SessionTimeout: d}).validate(); err != nil {
			t.Errorf("session_timeout %v refused: %v", d, err)
		}
	}
}

// `vodcluster manager` refuses a catalog_refresh or storage.plan_interval
// under 1s, naming the key: at 1ms (a typo for 1m) the manager started
// and read the origin's whole catalog a thousand times a second (a third
// of a core with 3 titles), or planned back to back.
func TestManagerRefusesCatalogRefreshAndPlanIntervalTooShort(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("ab", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	users, err := os.ReadFile("../../deploy/config/users.yaml")
	if err != nil {
		t.Fatal(err)
	}
	usersFile := filepath.Join(dir, "users.yaml")
	if err := os.WriteFile(usersFile, users, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "manager.yaml")
	head := "manager:\n  rtsp_listen: 127.0.0.1:0\n  http_listen: 127.0.0.1:0\n  grpc_listen: 127.0.0.1:0\n  data_dir: " +
		filepath.Join(dir, "state") + "\n  secret_file: " + secret + "\n  users_file: " + usersFile + "\n"
	var cases []refusedConfig
	for _, c := range []struct{ yaml, want string }{
		{"  catalog_refresh: 1ms\n", "--config " + cfg + ": line 8: catalog_refresh 1ms: at least 1s"},
		{"  catalog_refresh: 999ms\n", "--config " + cfg + ": line 8: catalog_refresh 999ms: at least 1s"},
		{"  catalog_refresh: 0.5s\n", "--config " + cfg + ": line 8: catalog_refresh 0.5s: at least 1s"},
		{"  storage:\n    plan_interval: 1ms\n", "--config " + cfg + ": line 9: storage.plan_interval 1ms: at least 1s"},
		// Each problem names the file (the message named the key alone).
		{"  catalog_refresh: 1ms\n  storage:\n    plan_interval: 2ms\n", "--config " + cfg + ": line 8: catalog_refresh 1ms: at least 1s (1m by default): " +
			"each read fetches the origin's whole catalog, which the origin reads again at most once a second\n--config " + cfg + ": line 10: storage.plan_interval 2ms: at least 1s"},
	} {
		cases = append(cases, refusedConfig{what: strings.TrimSpace(c.yaml), yaml: head + c.yaml, want: c.want})
	}
	refusedAtStart(t, "manager", cfg, cases)
	for _, m := range []ManagerConfig{{CatalogRefresh: time.Second}, {Storage: StorageConfig{PlanInterval: time.Second}}} {
		if err := m.validate(); err != nil {
			t.Errorf("1s refused: %v", err)
		}
	}
}

// refusedConfig is a configuration file a part refuses at start: what it
// sets (for messages), the whole file, and what the error must hold.
type refusedConfig struct{ what, yaml, want string }

// refusedAtStart writes each case's file to cfg and runs `vodcluster
// part --config cfg`: it must return an error holding the case's want,
// and not start (it fails the test when the part still runs after 10 s).
func refusedAtStart(t *testing.T, part, cfg string, cases []refusedConfig) {
	t.Helper()
	for _, c := range cases {
		if err := os.WriteFile(cfg, []byte(c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		root := newRoot()
		root.SetArgs([]string{part, "--config", cfg})
		root.SetOut(&strings.Builder{})
		root.SetErr(&strings.Builder{})
		done := make(chan error, 1)
		go func() { done <- root.Execute() }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %s: %v, want %q", part, c.what, err, c.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s %s: the %s started (still running after 10 s)", part, c.what, part)
		}
	}
}
