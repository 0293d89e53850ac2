//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
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

// A reader of up's output that exits (`vodcluster up | head -2`) stops up
// as Ctrl-C does, its temporary data directory removed, and up says why.
// The first write to the broken pipe killed it (SIGPIPE), leaving the
// directory with the cluster's and the portal's secrets.
func TestUpStopsWhenItsOutputIsClosed(t *testing.T) {
	tmp := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader has exited before up writes anything
	child := exec.Command(os.Args[0], "-test.run=^TestHangupHelperProcess$")
	child.Env = append(os.Environ(), "TMPDIR="+tmp, "VODCLUSTER_HANGUP_HELPER_ARGS="+strings.Join([]string{"up", "--rtsp-port", "0", "--http-port", "0",
		"--grpc-port", "0", "--metrics-port", "-1", "--nodes", "1", "--quiet"}, "\x1f"))
	var stderr logtest.Buffer
	child.Stdout, child.Stderr = w, &stderr
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	select {
	case err = <-exited:
	case <-time.After(60 * time.Second):
		child.Process.Kill()
		<-exited
		t.Fatalf("up still running 60 s after its output was closed:\n%s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "vodcluster: up: its output was closed") {
		t.Errorf("up with its output closed: %v, want exit status 1 saying its output was closed:\n%s", err, stderr.String())
	}
	if ents, err := os.ReadDir(tmp); err != nil || len(ents) != 0 {
		t.Errorf("temporary data directory left: %v %v", ents, err)
	}
}
