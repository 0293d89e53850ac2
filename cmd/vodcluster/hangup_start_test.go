//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"vodcluster/proto/logtest"
)

// TestHangupHelperProcess runs, in a child process of the tests below,
// vodcluster with the arguments $VODCLUSTER_HANGUP_HELPER_ARGS (separated
// by the unit separator, 0x1f), and exits as main does.
func TestHangupHelperProcess(t *testing.T) {
	args := os.Getenv("VODCLUSTER_HANGUP_HELPER_ARGS")
	if args == "" {
		t.Skip("run by the hangup tests in a child process")
	}
	root := newRoot()
	root.SetArgs(strings.Split(args, "\x1f"))
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "vodcluster:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// startHelper starts vodcluster args in a child process (its own process
// group) with env added; it returns the child, its standard error and its
// exit.
func startHelper(t *testing.T, env []string, args ...string) (*exec.Cmd, *logtest.Buffer, <-chan error) {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^TestHangupHelperProcess$")
	child.Env = append(append(os.Environ(), "VODCLUSTER_HANGUP_HELPER_ARGS="+strings.Join(args, "\x1f")), env...)
	var out logtest.Buffer
	child.Stdout, child.Stderr = &out, &out
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		exited <- child.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		child.Process.Kill()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	})
	return child, &out, exited
}

// A SIGHUP while a server command starts (here as it reads its
// configuration, a FIFO the test writes once the signal is sent) does not
// kill it: it was caught only once the server was built (an origin's
// title directory scanned, a node's disk read, a manager's store opened),
// and one before, from `systemctl reload` or logrotate's postrotate,
// killed the process, which systemd counts as a clean exit that
// Restart=on-failure does not restart. The command reads on (here to the
// configuration's missing section) and ends with its own error.
func TestHangupWhileStartingDoesNotKill(t *testing.T) {
	if signal.Ignored(syscall.SIGHUP) {
		t.Skip("SIGHUP is ignored (nohup): the children would not see its default action")
	}
	for _, command := range []string{"node", "manager", "cdp"} {
		t.Run(command, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "config.yaml")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			child, out, exited := startHelper(t, nil, command, "--config", fifo)
			opened := make(chan *os.File, 1)
			go func() {
				// Returns once the child opened the FIFO to read it.
				f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
				if err != nil {
					t.Error(err)
				}
				opened <- f
			}()
			var w *os.File
			select {
			case w = <-opened:
			case err := <-exited:
				t.Fatalf("%s ended before reading its configuration: %v\n%s", command, err, out.String())
			case <-time.After(30 * time.Second):
				t.Fatalf("%s did not open its configuration within 30 s:\n%s", command, out.String())
			}
			if w == nil {
				t.FailNow()
			}
			if err := child.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			_, werr := w.WriteString("{}\n") // no section: the command's own error
			w.Close()
			var err error
			select {
			case err = <-exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s still running 30 s after its configuration:\n%s", command, out.String())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out.String(), "no "+command+": section") {
				t.Fatalf("%s after a SIGHUP while it read its configuration: %v (write: %v), want exit status 1 naming the missing %s section:\n%s",
					command, err, werr, command, out.String())
			}
		})
	}
}

// A hangup or Ctrl-C while `vodcluster up` starts its cluster stops it
// once started, its temporary data directory removed: the signals were
// caught only once the cluster was up, and one before killed the
// process, leaving the directory with the cluster's and the portal's
// secrets.
func TestUpStopsOnHangupWhileStarting(t *testing.T) {
	if signal.Ignored(syscall.SIGHUP) {
		t.Skip("SIGHUP is ignored (nohup): up keeps running on a hangup")
	}
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			child, out, exited := startHelper(t, []string{"TMPDIR=" + tmp}, "up", "--rtsp-port", "0", "--http-port", "0",
				"--grpc-port", "0", "--metrics-port", "-1", "--nodes", "1")
			deadline := time.Now().Add(30 * time.Second)
			for {
				if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no temporary data directory within 30 s:\n%s", out.String())
				}
				time.Sleep(time.Millisecond)
			}
			started := strings.Contains(out.String(), "press Ctrl-C to stop")
			if err := child.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("up still running 30 s after %v:\n%s", sig, out.String())
			}
			if err != nil {
				t.Fatalf("up after %v while it started (banner printed before: %v): %v\n%s", sig, started, err, out.String())
			}
			if ents, err := os.ReadDir(tmp); err != nil || len(ents) != 0 {
				t.Fatalf("temporary data directory left after %v while up started: %v %v", sig, ents, err)
			}
		})
	}
}

// A SIGHUP caught while the manager starts is handled once it has
// started (its users file read again, its session records file
// reopened), not while its Start opens that file.
func TestManagerHangupWhileStartingHandledOnceStarted(t *testing.T) {
	if signal.Ignored(syscall.SIGHUP) {
		t.Skip("SIGHUP is ignored (nohup)")
	}
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(dir, "users.yaml")
	if _, err := runUser(t, "pw\n", "alice", "--file", users); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "manager.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	child, out, exited := startHelper(t, nil, "manager", "--config", fifo)
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // once the child reads its configuration
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(w, "manager:\n  rtsp_listen: 127.0.0.1:0\n  http_listen: 127.0.0.1:0\n  grpc_listen: 127.0.0.1:0\n"+
		"  data_dir: %s\n  secret_file: %s\n  users_file: %s\n  session_records_file: %s\n",
		filepath.Join(dir, "data"), secret, users, filepath.Join(dir, "sessions.jsonl"))
	w.Close()
	const hup = "SIGHUP: reading the users file"
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), hup) {
		select {
		case err := <-exited:
			t.Fatalf("manager ended: %v\n%s", err, out.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q within 30 s:\n%s", hup, out.String())
		}
	}
	if s, h := strings.Index(out.String(), "msg=\"manager started\""), strings.Index(out.String(), hup); s < 0 || h < s {
		t.Fatalf("the SIGHUP caught while the manager started was handled before it had started:\n%s", out.String())
	}
	if err := child.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("manager after SIGTERM: %v\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("manager still running 30 s after SIGTERM:\n%s", out.String())
	}
}
