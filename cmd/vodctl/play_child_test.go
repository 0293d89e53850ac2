package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv names the mode in which TestPlayChild runs, in a process of
// its own started by TestPlaySignalDisposition.
const childEnv = "VODCTL_TEST_PLAY_CHILD"

// TestPlayChild is the child process of TestPlaySignalDisposition (it
// sends itself signals): skipped unless $VODCTL_TEST_PLAY_CHILD names its
// mode. "second": SIGTERM during a play, then another once vodctl play
// returned. "ignored": SIGINT during a play of a process that ignores it.
// It prints the play's JSON report, "returned: ERR" and how long the play
// took.
func TestPlayChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("the child process of TestPlaySignalDisposition")
	}
	s, addr := startTSServer(t)
	sig, duration := syscall.SIGTERM, "60s" // the signal ends it
	if mode == "ignored" {
		sig, duration = syscall.SIGINT, "2s"
	}
	cmd := newRoot()
	cmd.SetOut(os.Stdout)
	cmd.SetErr(os.Stdout)
	cmd.SetArgs([]string{"--json", "play", "--duration", duration, "rtsp://demo:demo@" + addr + "/vod/sample-001"})
	go func() {
		select {
		case <-s.played:
		case <-time.After(10 * time.Second):
			return
		}
		for deadline := time.Now().Add(10 * time.Second); s.stream.BytesSent() < 200_000 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		}
		syscall.Kill(syscall.Getpid(), sig)
	}()
	start := time.Now()
	err := cmd.Execute()
	fmt.Printf("returned: %v\nplayed for %v\n", err, time.Since(start).Round(time.Millisecond))
	if mode == "second" {
		syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
		time.Sleep(5 * time.Second) // it dies of the SIGTERM first: no event to wait for
		fmt.Println("survived a second SIGTERM")
	}
}

// vodctl play restores the signals' dispositions: after a SIGTERM that
// ended the play (its JSON report printed), a second SIGTERM kills
// vodctl; and a SIGINT that vodctl was started ignoring (a play run in
// the background by a script) stays ignored: the play goes on to its
// --duration (signal.Notify caught it, and Ctrl-C at the terminal ended
// the scripts' background plays).
func TestPlaySignalDisposition(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in the child")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	run := func(mode string, argv ...string) (string, error) {
		c := exec.Command(argv[0], argv[1:]...)
		c.Env = append(os.Environ(), childEnv+"="+mode)
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				c.Process.Kill()
			}
		}()
		out, err := c.CombinedOutput()
		return string(out), err
	}
	self := []string{os.Args[0], "-test.run=^TestPlayChild$", "-test.count=1"}

	out, err := run("second", self...)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM ||
		!strings.Contains(out, "returned: <nil>\n") || strings.Contains(out, "survived") {
		t.Fatalf("SIGTERM during a play, then another: %v, want killed by the second\n%s", err, out)
	}
	var rep struct {
		VideoFrames int `json:"videoFrames"`
	}
	if i := strings.Index(out, "{"); i < 0 || json.NewDecoder(strings.NewReader(out[i:])).Decode(&rep) != nil || rep.VideoFrames == 0 {
		t.Fatalf("no JSON report with frames after SIGTERM:\n%s", out)
	}

	out, err = run("ignored", append([]string{"sh", "-c", `trap "" INT; exec "$0" "$@"`}, self...)...)
	var took time.Duration
	if i := strings.Index(out, "played for "); i >= 0 {
		took, _ = time.ParseDuration(strings.Fields(out[i+len("played for "):])[0])
	}
	if err != nil || !strings.Contains(out, "returned: <nil>\n") || took < 1900*time.Millisecond {
		t.Fatalf("SIGINT ignored from the start, during a 2 s play: %v, played for %v\n%s", err, took, out)
	}
}
