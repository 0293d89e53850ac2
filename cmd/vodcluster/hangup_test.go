package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"vodcluster/cdp/samples"
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
