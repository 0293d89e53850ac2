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
// took. "exit": SIGINT during a play run as main runs it, the process
// exiting with vodctl's exit status.
func TestPlayChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("the child process of TestPlaySignalDisposition")
	}
	s, addr := startTSServer(t)
	sig, duration := syscall.SIGTERM, "60s" // the signal ends it
	switch mode {
	case "ignored":
		sig, duration = syscall.SIGINT, "2s"
	case "exit":
		sig = syscall.SIGINT
	}
	args := []string{"--json", "play", "--duration", duration, "rtsp://demo:demo@" + addr + "/vod/sample-001"}
	cmd := newRoot()
	cmd.SetOut(os.Stdout)
	cmd.SetErr(os.Stdout)
	cmd.SetArgs(args)
	go func() {
		select {
		case <-s.played:
		case <-time.After(10 * time.Second):
			return
		}
		for deadline := time.Now().Add(10 * time.Second); s.stream.Stats().BytesSent < 200_000 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		}
		syscall.Kill(syscall.Getpid(), sig)
	}()
	if mode == "exit" {
		os.Exit(run(args, os.Stdout, os.Stderr))
	}
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
// the scripts' background plays). And vodctl run as main runs it exits
// 130 after a SIGINT that ended the play, its report printed.
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
		!strings.Contains(out, "returned: play interrupted by SIGTERM: the report is of the part played\n") || strings.Contains(out, "survived") {
		t.Fatalf("SIGTERM during a play, then another: %v, want killed by the second\n%s", err, out)
	}
	var rep struct {
		VideoFrames int `json:"videoFrames"`
	}
	if i := strings.Index(out, "{"); i < 0 || json.NewDecoder(strings.NewReader(out[i:])).Decode(&rep) != nil || rep.VideoFrames == 0 {
		t.Fatalf("no JSON report with frames after SIGTERM:\n%s", out)
	}

	// As main runs it: exit status 130 after the report (it was 0).
	rep.VideoFrames = 0
	out, err = run("exit", self...)
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(out, "\nvodctl: play interrupted by SIGINT: the report is of the part played\n") {
		t.Fatalf("SIGINT during a play: %v, want exit status 130\n%s", err, out)
	}
	if i := strings.Index(out, "{"); i < 0 || json.NewDecoder(strings.NewReader(out[i:])).Decode(&rep) != nil || rep.VideoFrames == 0 {
		t.Fatalf("no JSON report with frames after SIGINT:\n%s", out)
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
