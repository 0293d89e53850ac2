package main

import (
	"bytes"
	"strings"
	"testing"
)

// up --play whose --play-duration ends before the origin's first bytes
// reach the node filling the title (--origin-setup-delay longer than
// it) says that nothing came in the time played and which flags to
// change: it said only "up: --play sample-001 failed: no video frame
// received". The whole cluster runs, on loopback, with --once.
func TestUpPlayNothingReceivedSaysWhy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	cmd := upCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SilenceUsage = true
	cmd.SetArgs([]string{"--data-dir", t.TempDir(), "--quiet", "--nodes", "1",
		"--rtsp-port", "0", "--http-port", "0", "--grpc-port", "0", "--metrics-port", "-1",
		"--origin-setup-delay", "3s", "--play", "sample-009", "--play-duration", "500ms", "--once"})
	err := cmd.Execute()
	if err == nil {
		t.Fatalf("a play of 500ms against a 3s origin setup delay succeeded:\n%s", out.String())
	}
	for _, want := range []string{"no video frame received", "nothing came in 500ms of play", "--origin-setup-delay 3s", "--play-duration"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q: want %q in it", err, want)
		}
	}
}
