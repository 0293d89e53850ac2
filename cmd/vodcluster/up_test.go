package main

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"
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
