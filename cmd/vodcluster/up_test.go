package main

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestUpPlaysOnce runs `vodcluster up --play sample-001 --once` on free
// ports: the path `make run` takes, with the project's probe client.
func TestUpPlaysOnce(t *testing.T) {
	cmd := upCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--data-dir", t.TempDir(), "--rtsp-port", "0", "--http-port", "0", "--grpc-port", "0",
		"--quiet", "--play", "sample-001", "--play-duration", "3s", "--once"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("up: %v\n%s", err, out.String())
	}
	m := regexp.MustCompile(`: (\d+) video frames`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no play result in the output:\n%s", out.String())
	}
	if n, _ := strconv.Atoi(m[1]); n < 60 {
		t.Fatalf("%d video frames in 3 s, want about 75:\n%s", n, out.String())
	}
	for _, want := range []string{"front door RTSP", "demo / demo", "sample-001 ... sample-020"} {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Fatalf("banner lacks %q:\n%s", want, out.String())
		}
	}
}

// TestUpRefusesBadFlags: values that would start a cluster that cannot
// play, one without end, or fail only once it is up are refused before
// anything starts.
func TestUpRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--nodes", "0"}, {"--nodes", "-1"}, {"--nodes", "1000000"},
		{"--node-egress-bps", "0"}, {"--node-egress-bps", "-5"},
		{"--node-disk-bytes", "0"}, {"--node-disk-bytes", "-1"},
		{"--play", "sample-001", "--play-duration", "-1s"},
		{"--play", "sample-001", "--transport", "foo"},
		{"--once"},
		{"--rtsp-port", "70000"}, {"--grpc-port", "-5"}, {"--metrics-port", "-7"},
		{"extra-argument"},
	} {
		cmd := upCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SilenceUsage = true
		dir := t.TempDir()
		cmd.SetArgs(append([]string{"--data-dir", dir, "--quiet", "--rtsp-port", "0", "--http-port", "0", "--grpc-port", "0", "--metrics-port", "-1"}, args...))
		done := make(chan error, 1)
		go func() { done <- cmd.Execute() }()
		select {
		case err := <-done:
			if err == nil || (!strings.Contains(err.Error(), "up: ") && !strings.Contains(err.Error(), "unknown command")) {
				t.Fatalf("%v: %v", args, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: still running after 10 s", args)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("%v: the cluster started (%d entries in its data dir)", args, len(ents))
		}
	}
}
