package vodnode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLoadRTSPLoad measures how many concurrent viewers of a 4 Mbit/s title
// the node sustains, with ../shared/tools/rtspload as the load generator
// (its JSON line is logged; nothing is asserted: a measurement, not a
// test). It runs only with VODNODE_LOAD=1; pin the node and the generator
// to different cores:
//
//	cd /work/shared/tools/rtspload && go build -o $HOME/rtspload .
//	VODNODE_LOAD=1 VODNODE_LOAD_N=400 VODNODE_LOAD_TRANSPORT=tcp taskset -c 0 \
//	  go test -count=1 -run TestLoadRTSPLoad -v -timeout 10m ./vodnode/
//
// VODNODE_LOAD_CPU (default 1) is the core rtspload is pinned to;
// RTSPLOAD is its path (default $HOME/rtspload).
func TestLoadRTSPLoad(t *testing.T) {
	if os.Getenv("VODNODE_LOAD") == "" {
		t.Skip("set VODNODE_LOAD=1 to run the load measurement")
	}
	tool := os.Getenv("RTSPLOAD")
	if tool == "" {
		tool = filepath.Join(os.Getenv("HOME"), "rtspload")
	}
	if _, err := os.Stat(tool); err != nil {
		// Asked for (VODNODE_LOAD): a skip would read as a run that passed.
		t.Fatalf("rtspload not built: %v (build it from the repository's root: cd ../shared/tools/rtspload && go build -o \"$HOME/rtspload\" .; or set RTSPLOAD to its path)", err)
	}
	viewers := envInt("VODNODE_LOAD_N", 400)
	transport := envStr("VODNODE_LOAD_TRANSPORT", "tcp")
	seconds := envInt("VODNODE_LOAD_SECONDS", 40)
	cpu := envStr("VODNODE_LOAD_CPU", "1")

	dir := t.TempDir()
	titles := filepath.Join(dir, "titles")
	os.MkdirAll(titles, 0o755)
	clip := filepath.Join(titles, "load-4m.ts")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	encodeLoadClip(ctx, t, clip, seconds+30)
	n := &Node{ID: "load", DataDir: dir, Secret: testSecret, Logger: testLogger(), SessionTimeout: 120 * time.Second,
		MaxConnsPerAddr: -1} // every viewer of the load generator comes from 127.0.0.1
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	urls := make([]string, viewers)
	for i := range urls {
		urls[i] = nodeURL(n, mint(t, fmt.Sprintf("load-%d", i), "load-4m", "load", "", time.Hour), "load-4m")
	}
	args := []string{"-c", cpu, tool, "-n", strconv.Itoa(viewers), "-ramp", "100", "-transport", transport,
		"-duration", strconv.Itoa(seconds) + "s", "-pid", strconv.Itoa(os.Getpid()), "-udpbuf", "4194304",
		"-label", fmt.Sprintf("vodnode GOMAXPROCS=%d", runtime.GOMAXPROCS(0)), "-url", strings.Join(urls, ",")}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "taskset", args...)
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Logf("rtspload: %v", err)
	}
	res := map[string]any{}
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &res); err != nil {
		t.Fatalf("rtspload output: %v\n%s", err, out.String())
	}
	delete(res, "url")
	line, _ := json.Marshal(res)
	t.Logf("GOMAXPROCS=%d viewers=%d transport=%s\n%s", runtime.GOMAXPROCS(0), viewers, transport, line)
}

// encodeLoadClip encodes the load measurements' title with ffmpeg: seconds
// of 640x360 H.264 at 3.8 Mbit/s and AAC, muxed at a constant 4 Mbit/s.
func encodeLoadClip(ctx context.Context, t *testing.T, path string, seconds int) {
	t.Helper()
	enc := exec.CommandContext(ctx, "ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25",
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", strconv.Itoa(seconds),
		"-c:v", "libx264", "-preset", "ultrafast", "-b:v", "3.8M", "-g", "25",
		"-c:a", "aac", "-b:a", "96k", "-f", "mpegts", "-muxrate", "4M", path)
	if out, err := enc.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
}

func envStr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return def
}
