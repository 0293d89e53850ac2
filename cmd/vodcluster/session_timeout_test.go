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
	for _, v := range []string{"1ms", "500ms", "5s", "9.999s"} {
		cfg := filepath.Join(dir, "node.yaml")
		if err := os.WriteFile(cfg, []byte("node:\n  id: n1\n  data_dir: "+filepath.Join(dir, "data")+
			"\n  rtsp_listen: 127.0.0.1:0\n  http_listen: 127.0.0.1:0\n  secret_file: "+secret+
			"\n  session_timeout: "+v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		root := newRoot()
		root.SetArgs([]string{"node", "--config", cfg})
		root.SetOut(&strings.Builder{})
		root.SetErr(&strings.Builder{})
		done := make(chan error, 1)
		go func() { done <- root.Execute() }()
		select {
		case err := <-done:
			d, _ := time.ParseDuration(v)
			if want := "session_timeout " + d.String() + ": at least 10s"; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("session_timeout %s: %v, want %q", v, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("session_timeout %s: the node started (still running after 10 s)", v)
		}
	}
	for _, d := range []time.Duration{0, 10 * time.Second, time.Minute} {
		if err := (NodeConfig{SessionTimeout: d}).validate(); err != nil {
			t.Errorf("session_timeout %v refused: %v", d, err)
		}
	}
}
