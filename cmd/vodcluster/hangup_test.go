package main

import (
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"vodcluster/cdp/samples"
	"vodcluster/proto/logtest"
)

// SIGHUP makes `vodcluster cdp` read its title directory at once: a title
// file added to a directory without catalog.yaml is served after it.
func TestCDPReadsItsDirectoryOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	data, err := fs.ReadFile(samples.FS(), "clip-a.ts")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "first.ts"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := newCDP(CDPConfig{Dir: dir, Listen: "127.0.0.1:0", CatalogPoll: -time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	reloaded := make(chan error, 1)
	stop := onHangup("reading the title directory", "dir", dir, func() error {
		err := s.Reload()
		reloaded <- err
		return err
	})
	defer stop()

	if err := os.WriteFile(filepath.Join(dir, "second.ts"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-reloaded:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SIGHUP did not reload the origin's catalog within 10 s")
	}
	if _, ok := s.Catalog().Title("second"); !ok || s.Catalog().Len() != 2 {
		t.Fatalf("after SIGHUP the catalog has %d titles, want first and second", s.Catalog().Len())
	}
}

// SIGHUP makes `vodcluster manager` reopen its session records file: moved
// away by a log rotation, it is created again (and the records written
// before stay in the moved file).
func TestManagerReopensSessionRecordsOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(dir, "users.yaml")
	if _, err := runUser(t, "pw\n", "alice", "--file", users); err != nil {
		t.Fatal(err)
	}
	records := filepath.Join(dir, "sessions.jsonl")
	p, err := newManager(ManagerConfig{RTSPListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", GRPCListen: "127.0.0.1:0",
		DataDir: filepath.Join(dir, "data"), SecretFile: secret, UsersFile: users, SessionRecordsFile: records})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := os.Stat(records); err != nil {
		t.Fatalf("the records file is not created at start: %v", err)
	}
	stop := reloadOnHangup(p.users, p.Manager)
	defer stop()
	if err := os.Rename(records, records+".1"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the records file opened again after SIGHUP", func() bool {
		_, err := os.Stat(records)
		return err == nil
	})
}

// SIGHUP leaves `vodcluster node` serving, with an info line saying it
// has nothing to reload: without a handler it ended the node without a
// word (pkill -HUP vodcluster, meant for a manager and an origin on the
// same host, cut the node's viewers).
func TestNodeKeepsServingOnSIGHUP(t *testing.T) {
	if signal.Ignored(syscall.SIGHUP) {
		t.Skip("SIGHUP is ignored (nohup): the test would not see its default action")
	}
	dir := t.TempDir()
	// The node listens on it later: a port below the ephemeral range,
	// which no other socket takes meanwhile.
	httpAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(portBelowEphemeral(t)))
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "node.yaml")
	yaml := fmt.Sprintf("node:\n  id: n1\n  data_dir: %s\n  secret_file: %s\n  advertise_host: 127.0.0.1\n  rtsp_listen: 127.0.0.1:0\n  http_listen: %s\n",
		filepath.Join(dir, "data"), secret, httpAddr)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs logtest.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))

	cmd := nodeCmd()
	cmd.SetArgs([]string{"--config", config})
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()
	answers := func() bool {
		res, err := http.Get("http://" + httpAddr + "/s/nope/vod/nope.ts")
		if err != nil {
			return false
		}
		res.Body.Close()
		return true
	}
	eventually(t, 30*time.Second, "the node's HTTP listener answering", func() bool {
		select {
		case err := <-done:
			t.Fatalf("node ended before SIGHUP: %v\n%s", err, logs.String())
		default:
		}
		return answers()
	})
	// Its config has no manager: and no origin:, said at start.
	for _, w := range []string{"level=WARN msg=\"node: no manager address (node.manager)", "level=WARN msg=\"node: no origin address (node.origin)"} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("the node's start log lacks %q:\n%s", w, logs.String())
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the SIGHUP log line", func() bool {
		return strings.Contains(logs.String(), "SIGHUP: nothing to reload, serving on")
	})
	if !answers() {
		t.Fatalf("the node stopped answering after SIGHUP:\n%s", logs.String())
	}
	select {
	case err := <-done:
		t.Fatalf("node ended after SIGHUP: %v\n%s", err, logs.String())
	default:
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("node after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("node still running 30 s after SIGTERM")
	}
}
