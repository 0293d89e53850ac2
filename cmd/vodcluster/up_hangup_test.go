//go:build unix

package main

import (
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"vodcluster/proto/logtest"
)

// A hangup (the terminal running `make run` closed) stops up as Ctrl-C
// does, its temporary data directory removed: without a handler SIGHUP
// killed the process and left the directory, secrets included.
func TestUpStopsOnHangup(t *testing.T) {
	if signal.Ignored(syscall.SIGHUP) {
		t.Skip("SIGHUP is ignored (nohup): up keeps running on a hangup")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	cmd := upCmd()
	var out logtest.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--rtsp-port", "0", "--http-port", "0", "--grpc-port", "0", "--metrics-port", "-1", "--nodes", "1", "--quiet"})
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()
	eventually(t, 30*time.Second, "up's banner", func() bool { return strings.Contains(out.String(), "press Ctrl-C to stop") })
	if ents, err := os.ReadDir(tmp); err != nil || len(ents) != 1 {
		t.Fatalf("want up's temporary data directory in %s: %v %v", tmp, ents, err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("up after SIGHUP: %v\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("up still running 30 s after SIGHUP:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "shutting down") {
		t.Fatalf("up did not shut down:\n%s", out.String())
	}
	if ents, err := os.ReadDir(tmp); err != nil || len(ents) != 0 {
		t.Fatalf("temporary data directory left after SIGHUP: %v %v", ents, err)
	}
}
