//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"vodcluster/acm/store"
)

// upFlagsNoStart are up's flags for a run that must not get far: free
// ports, no metrics, no logs.
var upFlagsNoStart = []string{"--quiet", "--rtsp-port", "0", "--http-port", "0", "--grpc-port", "0", "--metrics-port", "-1"}

// runUp runs `vodcluster up` with args in this process and returns its
// error and output; it fails the test when up is still running after
// 10 s (it was to be refused at start).
func runUp(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := upCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SilenceUsage = true
	cmd.SetArgs(append(append([]string{}, upFlagsNoStart...), args...))
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(10 * time.Second):
		t.Fatalf("up %v: still running after 10 s", args)
		return "", nil
	}
}

// A --data-dir that is a file, below a file, or a directory no file can be
// made in is refused at start, naming the flag, the path and why: a
// directory up could not write failed once the cluster started, with
// "open DIR/secret: permission denied", which names neither the flag nor
// the reason to look at it.
func TestUpRefusesUnwritableDataDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// A symbolic link to a directory that does not exist (a volume not
	// mounted) was refused with "cannot create it: file exists".
	dangling := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink("/nonexistent/vodcluster-data", dangling); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ dir, want string }{
		{file, "up: --data-dir " + file + ": not a directory"},
		{file + "/sub", "up: --data-dir " + file + "/sub: cannot create it: " + file + ": not a directory"},
		{dangling, "up: --data-dir " + dangling + ": a symbolic link to /nonexistent/vodcluster-data, which does not exist"},
		{dangling + "/", "up: --data-dir " + dangling + "/: a symbolic link to /nonexistent/vodcluster-data, which does not exist"},
	}
	// sysfs: no one makes a file there, root included (permission
	// denied).
	if info, err := os.Stat("/sys/kernel"); err == nil && info.IsDir() {
		cases = append(cases, struct{ dir, want string }{"/sys/kernel", "up: --data-dir /sys/kernel: not writable: permission denied"})
	}
	for _, c := range cases {
		out, err := runUp(t, "--data-dir", c.dir)
		if err == nil || err.Error() != c.want {
			t.Errorf("--data-dir %s: %v, want %q\n%s", c.dir, err, c.want, out)
		}
	}

	// A directory without write permission, and one below it: for root,
	// to whom permission bits do not apply, up runs in a child process
	// as nobody.
	base, err := os.MkdirTemp("", "vodcluster-datadir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	ro := filepath.Join(base, "read-only")
	if err := os.Mkdir(ro, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o700) }) // for RemoveAll as a user
	for _, c := range []struct{ dir, want string }{
		{ro, "up: --data-dir " + ro + ": not writable: permission denied"},
		{ro + "/sub", "up: --data-dir " + ro + "/sub: cannot create it: permission denied"},
	} {
		var got string
		if os.Geteuid() != 0 {
			out, err := runUp(t, "--data-dir", c.dir)
			if err == nil {
				t.Fatalf("--data-dir %s: up ran\n%s", c.dir, out)
			}
			got = err.Error()
		} else {
			got = upAsNobody(t, base, "--data-dir", c.dir)
		}
		if got != c.want {
			t.Errorf("--data-dir %s (no write permission): %q, want %q", c.dir, got, c.want)
		}
		if ents, _ := os.ReadDir(ro); len(ents) != 0 {
			t.Errorf("--data-dir %s: %d entries left in %s", c.dir, len(ents), ro)
		}
	}
}

// upAsNobody runs `vodcluster up` with args in a child process (this test
// binary, copied into base, which must let others in) as the user nobody
// (65534), and returns its error as main prints it: what it wrote after
// "vodcluster: ". The test is skipped when the child cannot be started as
// nobody (no privilege to change user).
func upAsNobody(t *testing.T, base string, args ...string) string {
	t.Helper()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "vodcluster.test")
	if _, err := os.Stat(bin); errors.Is(err, os.ErrNotExist) {
		copyFile(t, os.Args[0], bin, 0o755)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	child := exec.CommandContext(ctx, bin, "-test.run=^TestHangupHelperProcess$")
	child.Dir = base
	child.Env = append(os.Environ(), "VODCLUSTER_HANGUP_HELPER_ARGS="+strings.Join(append(append([]string{"up"}, upFlagsNoStart...), args...), "\x1f"))
	child.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	child.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	child.Stdout, child.Stderr = &out, &out
	if err := child.Start(); err != nil {
		t.Skipf("cannot run the child process as nobody: %v", err)
	}
	err := child.Wait()
	if err == nil {
		t.Fatalf("up %v as nobody exited 0:\n%s", args, out.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if msg, ok := strings.CutPrefix(line, "vodcluster: "); ok {
			return msg
		}
	}
	t.Fatalf("up %v as nobody: %v, no error printed:\n%s", args, err, out.String())
	return ""
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// A second up on a --data-dir in use (its manager's store held) is refused
// naming the flag and what holds it: it said "manager: acm: store: data
// directory in use by another process: DIR/manager", naming neither.
func TestUpDataDirInUseNamesTheFlag(t *testing.T) {
	dir := t.TempDir()
	held, err := store.OpenBadger(filepath.Join(dir, "manager"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, err = runUp(t, "--data-dir", dir)
	want := "up: --data-dir " + dir + ": in use by another vodcluster (an up on the same --data-dir, or a vodcluster manager whose data_dir is " +
		filepath.Join(dir, "manager") + "): stop it, or give another --data-dir"
	if err == nil || err.Error() != want {
		t.Fatalf("up on a --data-dir in use: %v\nwant %s", err, want)
	}
}
