package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"vodcluster/acm/boss"
	"vodcluster/proto/logtest"
)

// openPTY returns a new pseudo-terminal: its master side (what a person's
// terminal window is) and its slave side (the program's standard input).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// On a terminal, vodcluster user asks for the password and does not echo
// it, then puts the echo back: it waited silently for a line (the
// deploy README said "it asks for the password"), and what was typed
// showed on the screen.
func TestUserAsksForThePasswordOnATerminal(t *testing.T) {
	master, slave := openPTY(t)
	f := filepath.Join(t.TempDir(), "users.yaml")
	cmd := userCmd()
	cmd.SetArgs([]string{"alice", "--file", f})
	cmd.SetIn(slave)
	var errb logtest.Buffer
	cmd.SetOut(&errb)
	cmd.SetErr(&errb)
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(errb.String(), "password for alice") {
		if time.Now().After(deadline) {
			t.Fatalf("no prompt in 10 s: %q", errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := master.Write([]byte("s3cret-typed\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the password line was not taken in 10 s")
	}
	// What the terminal shows: the newline (ECHONL), not the password.
	master.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	shown := make([]byte, 256)
	n, _ := master.Read(shown)
	if strings.Contains(string(shown[:n]), "s3cret") {
		t.Fatalf("the password was echoed: %q", shown[:n])
	}
	tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil || tio.Lflag&unix.ECHO == 0 {
		t.Fatalf("echo not put back: %v", err)
	}
	users, err := boss.LoadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := users.Authenticate(t.Context(), boss.Credentials{User: "alice", Password: "s3cret-typed"}); err != nil {
		t.Fatalf("the typed password: %v", err)
	}
}
