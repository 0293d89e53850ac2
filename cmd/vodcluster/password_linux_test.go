package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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

// On a terminal, vodcluster user asks for the password twice and does
// not echo it, then puts the echo back: it waited silently for a line
// (the deploy README said "it asks for the password"), and what was
// typed showed on the screen.
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
	for !strings.Contains(errb.String(), "password for alice again") {
		if time.Now().After(deadline) {
			t.Fatalf("not asked again in 10 s: %q", errb.String())
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

// waitFor polls cond every 10 ms until it holds, failing the test after
// 10 s with what was awaited.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// echoOn reports whether the terminal f echoes what is typed.
func echoOn(t *testing.T, f *os.File) bool {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return tio.Lflag&unix.ECHO != 0
}

// Two passwords that differ on a terminal are refused with an error that
// says so, and the users file is left as it was: the password was asked
// once, and a typo became the subscriber's password.
func TestUserRefusesTwoPasswordsThatDiffer(t *testing.T) {
	master, slave := openPTY(t)
	f := filepath.Join(t.TempDir(), "users.yaml")
	if _, err := runUser(t, "pw-bob\n", "bob", "--file", f); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	cmd := userCmd()
	cmd.SetArgs([]string{"bob", "--file", f})
	cmd.SetIn(slave)
	var errb logtest.Buffer
	cmd.SetOut(&errb)
	cmd.SetErr(&errb)
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()
	waitFor(t, "the prompt", func() bool { return strings.Contains(errb.String(), "password for bob (not echoed)") })
	master.Write([]byte("s3cret\n"))
	waitFor(t, "the second prompt", func() bool { return strings.Contains(errb.String(), "password for bob again") })
	master.Write([]byte("s3cert\n"))
	select {
	case err := <-done:
		if !errors.Is(err, errPasswordsDiffer) || !strings.Contains(err.Error(), "differ") {
			t.Fatalf("two passwords that differ: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer in 10 s")
	}
	if after, _ := os.ReadFile(f); !bytes.Equal(after, before) {
		t.Fatalf("the users file changed:\n%s", after)
	}
	if !echoOn(t, slave) {
		t.Fatal("echo not put back")
	}
}

// askTwice returns the password typed twice the same; otherwise the
// error says why.
func TestAskTwice(t *testing.T) {
	for _, c := range []struct {
		typed   []string
		want    string
		wantErr string
	}{
		{[]string{"s3cret", "s3cret"}, "s3cret", ""},
		{[]string{"s3cret", "s3cret "}, "", "differ"},
		{[]string{"s3cret", ""}, "", "differ"},
		{[]string{""}, "", "no password typed"},
		{[]string{"s3cret"}, "", "typed again: EOF"},
	} {
		p := &fakePrompt{lines: c.typed}
		got, err := askTwice(p, "alice")
		if got != c.want || (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("typed %q: %q, %v; want %q, error with %q", c.typed, got, err, c.want, c.wantErr)
		}
	}
}

// fakePrompt answers the lines in order, then io.EOF; a line is answered
// with the error at its index in errs, if any.
type fakePrompt struct {
	lines []string
	errs  []error
}

func (p *fakePrompt) ReadLine(string) (string, error) {
	if len(p.lines) == 0 {
		return "", io.EOF
	}
	l := p.lines[0]
	p.lines = p.lines[1:]
	var err error
	if len(p.errs) > 0 {
		err, p.errs = p.errs[0], p.errs[1:]
	}
	return l, err
}

// A password ended by Ctrl-D (twice, with no Enter) is asked again like
// one ended by Enter: it was taken unconfirmed. An empty one, by Enter or
// Ctrl-D, is errNoPasswordTyped; a terminal's read error is returned.
func TestAskTwiceFirstAnswerEndedByEOF(t *testing.T) {
	p := &fakePrompt{lines: []string{"s3cret", "s3cert"}, errs: []error{io.EOF, nil}}
	if got, err := askTwice(p, "alice"); !errors.Is(err, errPasswordsDiffer) {
		t.Fatalf("s3cret<EOF> then s3cert: %q %v, want the two to differ", got, err)
	}
	p = &fakePrompt{lines: []string{"s3cret", "s3cret"}, errs: []error{io.EOF, nil}}
	if got, err := askTwice(p, "alice"); got != "s3cret" || err != nil {
		t.Fatalf("s3cret<EOF> twice: %q %v", got, err)
	}
	p = &fakePrompt{lines: []string{""}, errs: []error{io.EOF}}
	if _, err := askTwice(p, "alice"); !errors.Is(err, errNoPasswordTyped) {
		t.Fatalf("Ctrl-D at once: %v", err)
	}
	p = &fakePrompt{lines: []string{""}, errs: []error{syscall.EIO}}
	if _, err := askTwice(p, "alice"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("a read error: %v", err)
	}
}

// On a terminal, Enter at the prompt with nothing typed is refused with
// a message for a terminal, nothing written, the echo back on: it said
// "no password on stdin: give it on the first line (echo ...)", as if the
// password had been piped.
func TestUserEmptyPasswordOnATerminal(t *testing.T) {
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
	waitFor(t, "the prompt", func() bool { return strings.Contains(errb.String(), "password for alice (not echoed)") })
	master.Write([]byte("\n"))
	select {
	case err := <-done:
		if !errors.Is(err, errNoPasswordTyped) || strings.Contains(err.Error(), "stdin") || strings.Contains(err.Error(), "echo") {
			t.Fatalf("nothing typed on a terminal: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer in 10 s")
	}
	if strings.Contains(errb.String(), "password for alice again") {
		t.Fatalf("asked again after nothing was typed: %q", errb.String())
	}
	if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a users file written: %v", err)
	}
	if !echoOn(t, slave) {
		t.Fatal("echo not put back")
	}
}

// The child of TestUserSignalPutsTheEchoBack: vodcluster user on the
// terminal it has as standard input.
func TestUserHelperProcess(t *testing.T) {
	f := os.Getenv("VODCLUSTER_USER_HELPER_FILE")
	if f == "" {
		t.Skip("run by TestUserSignalPutsTheEchoBack")
	}
	cmd := userCmd()
	cmd.SetArgs([]string{"alice", "--file", f})
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "vodcluster:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// A signal while the password is asked puts the terminal's echo back:
// SIGINT, SIGQUIT (Ctrl-\) and SIGTERM before the process ends with
// 128 + the signal (nothing written), SIGTSTP (Ctrl-Z) before it stops;
// continued, it turns the echo off and asks again. Ctrl-\ and Ctrl-Z
// left the terminal with echo off.
func TestUserSignalPutsTheEchoBack(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGTSTP} {
		t.Run(sig.String(), func(t *testing.T) {
			master, slave := openPTY(t)
			f := filepath.Join(t.TempDir(), "users.yaml")
			child := exec.Command(os.Args[0], "-test.run=^TestUserHelperProcess$")
			child.Env = append(os.Environ(), "VODCLUSTER_USER_HELPER_FILE="+f)
			child.Stdin = slave
			var errb logtest.Buffer
			child.Stderr = &errb
			// A group of its own: its stop is not discarded as that of
			// an orphaned group's would be, and no signal reaches the test.
			child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- child.Wait() }()
			t.Cleanup(func() {
				child.Process.Kill()
				<-exited
			})
			prompts := func() int { return strings.Count(errb.String(), "password for alice (not echoed)") }
			waitFor(t, "the prompt", func() bool { return prompts() == 1 })
			if echoOn(t, slave) {
				t.Fatal("echo on while the password is asked")
			}
			if err := child.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if sig != syscall.SIGTSTP {
				var err error
				select {
				case err = <-exited:
				case <-time.After(10 * time.Second):
					t.Fatalf("still running 10 s after %v", sig)
				}
				exited <- err // for the cleanup
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 128+int(sig) {
					t.Fatalf("after %v: %v, want exit status %d; stderr %q", sig, err, 128+int(sig), errb.String())
				}
				if !echoOn(t, slave) {
					t.Fatalf("echo left off after %v", sig)
				}
				if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("a users file written: %v", err)
				}
				return
			}
			waitFor(t, "the stop", func() bool { return procState(child.Process.Pid) == "T" })
			if !echoOn(t, slave) {
				t.Fatal("echo left off while stopped")
			}
			if err := child.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the prompt again", func() bool { return prompts() == 2 })
			if echoOn(t, slave) {
				t.Fatal("echo on when asked again")
			}
			master.Write([]byte("s3cret\n"))
			waitFor(t, "the second prompt", func() bool { return strings.Contains(errb.String(), "again: ") })
			master.Write([]byte("s3cret\n"))
			select {
			case err := <-exited:
				exited <- err
				if err != nil {
					t.Fatalf("%v; stderr %q", err, errb.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatal("not done 10 s after the password")
			}
			users, err := boss.LoadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := users.Authenticate(t.Context(), boss.Credentials{User: "alice", Password: "s3cret"}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// procState is the state letter of process pid (R, S, T, ...), or "".
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+3 <= len(s) {
		return s[i+2 : i+3]
	}
	return ""
}
