package vodnode

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLoadHTTP measures how many concurrent HTTP viewers of a 4 Mbit/s
// title the node sustains: progressive MPEG-TS downloads
// (VODNODE_LOAD_MODE=ts, the default) or HLS viewers fetching the
// playlist, then the segments as they play (hls). The load generator is
// this test binary run again (TestLoadHTTPViewers) pinned to another core,
// so that the node's CPU is this process's alone. Its JSON line is logged;
// nothing is asserted (a measurement, not a test). It runs only with
// VODNODE_LOAD=1; pin the node to one core:
//
//	VODNODE_LOAD=1 VODNODE_LOAD_N=400 taskset -c 0 \
//	  go test -count=1 -run 'TestLoadHTTP$' -v -timeout 10m ./vodnode/
//
// VODNODE_LOAD_N viewers (400), started VODNODE_LOAD_RAMP a second (100),
// for VODNODE_LOAD_SECONDS (40); VODNODE_LOAD_CPU (1) is the load
// generator's core; VODNODE_LOAD_AHEAD the seconds an HLS viewer buffers
// ahead (12); VODNODE_LOAD_PROFILE a file for the node's CPU profile over
// the measured window.
func TestLoadHTTP(t *testing.T) {
	if os.Getenv("VODNODE_LOAD") == "" {
		t.Skip("set VODNODE_LOAD=1 to run the load measurement")
	}
	viewers := envInt("VODNODE_LOAD_N", 400)
	seconds := envInt("VODNODE_LOAD_SECONDS", 40)
	mode := envStr("VODNODE_LOAD_MODE", "ts")
	cpu := envStr("VODNODE_LOAD_CPU", "1")
	if mode != "ts" && mode != "hls" {
		t.Fatalf("VODNODE_LOAD_MODE %q: ts or hls", mode)
	}

	dir := t.TempDir()
	titles := filepath.Join(dir, "titles")
	if err := os.MkdirAll(titles, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds)*time.Second+5*time.Minute)
	defer cancel()
	// long enough for a progressive viewer taking its burst, then 1.2
	// times real time, to the end of the run
	encodeLoadClip(ctx, t, filepath.Join(titles, "load-4m.ts"), seconds*13/10+30)
	n := &Node{ID: "load", DataDir: dir, HTTPListen: "127.0.0.1:0", Secret: testSecret, Logger: testLogger(),
		SessionTimeout: 120 * time.Second, MaxConnsPerAddr: -1} // every viewer of the load comes from 127.0.0.1
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	cfg := httpLoadConfig{Mode: mode, Ramp: envInt("VODNODE_LOAD_RAMP", 100), Run: time.Duration(seconds) * time.Second,
		AheadS: float64(envInt("VODNODE_LOAD_AHEAD", 12)), MaxLate: time.Second}
	for i := range viewers {
		path := "load-4m.ts"
		if mode == "hls" {
			path = "load-4m/index.m3u8"
		}
		cfg.URLs = append(cfg.URLs, httpURL(n, mint(t, fmt.Sprintf("hload-%d", i), "load-4m", "load", "", time.Hour), path))
	}
	cfgPath := filepath.Join(dir, "loadgen.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.CommandContext(ctx, "taskset", "-c", cpu, os.Args[0], "-test.run=^TestLoadHTTPViewers$", "-test.count=1",
		"-test.timeout="+(cfg.Run+2*time.Minute).String())
	cmd.Env = append(os.Environ(), "VODNODE_LOADGEN="+cfgPath)
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()

	var cpu0, cpu1 time.Duration
	var busy0, busy1, all0, all1 uint64
	var t0, t1 time.Time
	var res map[string]any
	profile := os.Getenv("VODNODE_LOAD_PROFILE")
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() { // ends when the load generator exits (its end of the pipe closed)
		switch line := sc.Text(); {
		case line == "start":
			t0, cpu0 = time.Now(), selfCPU()
			busy0, all0 = machineJiffies()
			if profile != "" {
				f, err := os.Create(profile)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					t.Fatal(err)
				}
				defer pprof.StopCPUProfile() // once the end has not come
			}
		case line == "end":
			t1, cpu1 = time.Now(), selfCPU()
			busy1, all1 = machineJiffies()
			if profile != "" {
				pprof.StopCPUProfile()
			}
		case strings.HasPrefix(line, "result "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "result ")), &res); err != nil {
				t.Fatalf("load generator result: %v\n%s", err, line)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Logf("load generator: %v", err)
	}
	if res == nil || t1.IsZero() {
		t.Fatal("the load generator gave no result")
	}
	res["node_cpu_pct"] = round(100*(cpu1-cpu0).Seconds()/t1.Sub(t0).Seconds(), 1)
	if all1 > all0 {
		res["machine_busy_pct"] = round(100*float64(busy1-busy0)/float64(all1-all0), 1)
	}
	res["gomaxprocs"] = runtime.GOMAXPROCS(0)
	line, _ := json.Marshal(res)
	t.Logf("GOMAXPROCS=%d viewers=%d mode=%s\n%s", runtime.GOMAXPROCS(0), viewers, mode, line)
}

// machineJiffies returns the busy and the total jiffies of all the
// machine's cores (/proc/stat); zeros if it cannot be read.
func machineJiffies() (busy, total uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	for i, v := range f[1:] {
		n, _ := strconv.ParseUint(v, 10, 64)
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total
}
