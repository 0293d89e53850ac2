package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"vodcluster/cmd/internal/probe"
	"vodcluster/proto/logtest"
)

// TestUpPlaysOnce runs `vodcluster up --play sample-001 --once` on free
// ports: the path `make run` takes, with the project's probe client. The
// metrics port too: it took the default 9464, and failed while `make run`
// (or any manager with metrics there) was up on the machine.
func TestUpPlaysOnce(t *testing.T) {
	cmd := upCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--data-dir", t.TempDir(), "--rtsp-port", "0", "--http-port", "0", "--grpc-port", "0", "--metrics-port", "0",
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
	for _, want := range []string{"front door RTSP", "demo / demo", "sample-001 ... sample-020", "subscriber-token --secret-file "} {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Fatalf("banner lacks %q:\n%s", want, out.String())
		}
	}
	checkBannerFollowsREADME(t, out.String())
}

// sampleRE finds the sample title a play command names.
var sampleRE = regexp.MustCompile(`/vod/(sample-\d+)`)

// checkBannerFollowsREADME checks that the banner's play commands name
// their titles in the order of README.md's play commands (the sh block
// after "What make run shows"): the banner listed cvlc's sample-005
// before the HLS ffplay's sample-004, README the other way round.
func checkBannerFollowsREADME(t *testing.T, banner string) {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "## What `make run` shows")
	if !ok {
		t.Fatal("README.md has no \"What `make run` shows\"")
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	if !ok {
		t.Fatal("README.md: no play commands after \"What `make run` shows\"")
	}
	titles := func(text string) []string {
		var out []string
		for _, l := range strings.Split(text, "\n") {
			if strings.Contains(l, "?token=") || strings.HasPrefix(l, "play") {
				continue // the token line (README shows it apart, with the banner) and the --play result
			}
			if m := sampleRE.FindStringSubmatch(l); m != nil {
				out = append(out, m[1])
			}
		}
		return out
	}
	got, want := titles(banner), titles(block)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("banner's play commands name %v, README.md's %v: not in README's order", got, want)
	}
}

// With --once and no --data-dir the data directory is temporary, removed
// when up returns: the banner names no file in it (the portal secret of
// subscriber-token's hint).
func TestUpOnceTemporaryDirNamesNoFile(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	cmd := upCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--rtsp-port", "0", "--http-port", "0", "--grpc-port", "0", "--metrics-port", "-1",
		"--quiet", "--play", "sample-001", "--play-duration", "1s", "--once"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("up: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "(data in "+tmp) || !strings.Contains(out.String(), "video frames") {
		t.Fatalf("not up in a temporary directory of %s, or no play:\n%s", tmp, out.String())
	}
	if strings.Contains(out.String(), "--secret-file") || !strings.Contains(out.String(), "its secret goes with the temporary data directory") {
		t.Fatalf("banner of up --once in a temporary directory names its portal secret:\n%s", out.String())
	}
	if ents, err := os.ReadDir(tmp); err != nil || len(ents) != 0 {
		t.Fatalf("temporary data directory left: %v %v", ents, err)
	}
}

// TestUpRefusesBadFlags: values that would start a cluster that cannot
// play, one without end, or fail only once it is up are refused before
// anything starts.
func TestUpRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--nodes", "0"}, {"--nodes", "-1"}, {"--nodes", "1000000"},
		{"--node-egress-bps", "0"}, {"--node-egress-bps", "-5"},
		{"--host", "0.0.0.0"}, {"--host", "::"}, {"--host", "[::]"}, // the nodes announced it; the manager refused them: "context deadline exceeded" after 15 s
		{"--node-disk-bytes", "0"}, {"--node-disk-bytes", "-1"},
		{"--node-disk-bytes", "1000000"}, // smaller than a sample title: every play of it 453
		{"--data-dir", "/dev/null"},      // a file: it was "secret_file: open /dev/null/secret: not a directory"
		{"--queue-deadline", "-1s"}, {"--origin-setup-delay", "-1s"},
		{"--origin-rate-bps", "-1"}, {"--origin-channels", "-3"},
		{"--play", "sample-001", "--play-duration", "-1s"},
		{"--play", "sample-001", "--transport", "foo"},
		{"--once"}, {"--play", "nosuch", "--once"},
		{"--host", "192.0.2.1"}, // an address not on this machine: "origin: cdp: listen tcp 192.0.2.1:0: bind: cannot assign requested address"
		{"--policy", "bogus"},   // the origin started, then "manager: acm: lsm: unknown policy", the flag unnamed
		{"--max-sessions-per-user", "0"}, {"--max-sessions-per-user", "-2"},
		{"--requests-per-user", "0"}, {"--requests-per-user", "-2"},
		{"--max-conns-per-addr", "0"}, {"--max-conns-per-addr", "-2"},
		{"--rtsp-port", "70000"}, {"--grpc-port", "-5"}, {"--metrics-port", "-7"},
		// two of the manager's listeners on one port: the second failed
		// with "address already in use", as if another process held it
		{"--rtsp-port", "45871", "--http-port", "45871"}, {"--grpc-port", "45872", "--metrics-port", "45872"},
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

// Two of up's listeners given one port are refused naming both flags
// (the second listener failed with "bind: address already in use", as
// if another process held the port); 0 (any free port) twice, and
// --metrics-port -1 beside a 0, are not one port.
func TestUpRefusesOnePortTwice(t *testing.T) {
	ok := clusterOptions{Nodes: 1, Host: "127.0.0.1", NodeEgress: 1e8, NodeDisk: 16_000_000, MetricsPort: -1}
	if err := checkUpFlags(ok, "", "tcp", false); err != nil {
		t.Fatalf("every port 0 (any), metrics -1: %v", err)
	}
	for _, c := range []struct {
		set  func(*clusterOptions)
		want string
	}{
		{func(o *clusterOptions) { o.RTSPPort, o.HTTPPort = 45871, 45871 }, "--rtsp-port and --http-port are both 45871"},
		{func(o *clusterOptions) { o.HTTPPort, o.GRPCPort = 45873, 45873 }, "--http-port and --grpc-port are both 45873"},
		{func(o *clusterOptions) { o.RTSPPort, o.MetricsPort = 45874, 45874 }, "--rtsp-port and --metrics-port are both 45874"},
	} {
		o := ok
		c.set(&o)
		err := checkUpFlags(o, "", "tcp", false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("want %q, got %v", c.want, err)
		}
	}
}

// startUp runs `vodcluster up` with args on free ports (metrics off,
// quiet) until the test ends, and returns the front door's HTTP address
// and up's output once the cluster is up.
func startUp(t *testing.T, args ...string) (front string, out *logtest.Buffer) {
	t.Helper()
	cmd := upCmd()
	out = &logtest.Buffer{}
	cmd.SetOut(out)
	cmd.SetErr(out)
	cmd.SetArgs(append([]string{"--data-dir", t.TempDir(), "--rtsp-port", "0", "--http-port", "0", "--grpc-port", "0", "--metrics-port", "-1",
		"--quiet"}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("up: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("up still running 30 s after its context ended")
		}
	})
	frontRE := regexp.MustCompile(`front door HTTP  http://(\S+)/vod/`)
	for deadline := time.Now().Add(60 * time.Second); ; {
		s := out.String()
		if m := frontRE.FindStringSubmatch(s); m != nil && strings.Contains(s, "cluster is up") {
			return m[1], out
		}
		select {
		case err := <-done:
			t.Fatalf("up returned %v before it was up:\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("up not up within 60 s:\n%s", out.String())
		}
	}
}

// up --max-sessions-per-user N lets the demo subscriber hold N sessions
// at once: N viewers of the front door's HTTP are sent to a node, the
// next one is refused (429), where the default would refuse the 9th.
func TestUpMaxSessionsPerUser(t *testing.T) {
	const limit = 12
	front, out := startUp(t, "--origin-channels", "16", "--max-sessions-per-user", strconv.Itoa(limit)) // a fill each: 13 titles
	if want := fmt.Sprintf("at most %d sessions at once: --max-sessions-per-user", limit); !strings.Contains(out.String(), want) {
		t.Errorf("banner lacks %q:\n%s", want, out.String())
	}
	client := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i := 1; i <= limit+1; i++ {
		req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/vod/sample-%03d.ts", front, i), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(demoUser, demoPassword)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := http.StatusFound
		if i > limit {
			want = http.StatusTooManyRequests
		}
		if resp.StatusCode != want {
			t.Fatalf("viewer %d of a subscriber limited to %d: %s, want %d", i, limit, resp.Status, want)
		}
	}
}

// up's --requests-per-user and --max-conns-per-addr reach the manager,
// and --max-conns-per-addr the nodes: a load generator playing many
// viewers as demo from one address met the request limit (20 at once,
// then 2 a second: 269 of 300 viewers got 429 or 503) and up had no flag
// to lift it. With -1, 40 requests at once are all sent to a node; 45
// connections from one address are open at a limit of 45, at the front
// door and at a node, and a 46th is refused at accept (503) while
// another address connects.
func TestUpLoadLimitsLifted(t *testing.T) {
	front, _ := startUp(t, "--max-sessions-per-user", "-1", "--requests-per-user", "-1", "--max-conns-per-addr", "45")
	const n = 40
	codes := make(chan int, n)
	errs := make(chan error, n)
	located := make(chan string, n)
	for range n {
		go func() {
			req, err := http.NewRequest(http.MethodGet, "http://"+front+"/vod/sample-001.ts", nil)
			if err != nil {
				errs <- err
				codes <- 0
				return
			}
			req.SetBasicAuth(demoUser, demoPassword)
			// From 127.0.0.3, apart from the connections counted below.
			tr := &http.Transport{DisableKeepAlives: true, DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 3)}}).DialContext}
			client := &http.Client{Timeout: 20 * time.Second, Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := client.Do(req)
			if err != nil {
				errs <- err
				codes <- 0
				return
			}
			resp.Body.Close()
			located <- resp.Header.Get("Location")
			codes <- resp.StatusCode
		}()
	}
	for i := range n {
		if c := <-codes; c == 0 {
			t.Fatalf("request %d of %d at once: %v", i+1, n, <-errs)
		} else if c != http.StatusFound {
			t.Fatalf("request %d of %d at once with --requests-per-user -1: status %d, want 302", i+1, n, c)
		}
	}
	loc, err := url.Parse(<-located)
	if err != nil || loc.Host == "" {
		t.Fatalf("a redirect's Location: %v %v", loc, err)
	}
	dial := func(ip net.IP, to string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", to)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// status sends an HTTP request on c and returns its answer's status
	// line, "" if the server closed c without one.
	status := func(c net.Conn) string {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return ""
		}
		line, _ := bufio.NewReader(c).ReadString('\n')
		return strings.TrimSpace(line)
	}
	for _, to := range []string{front, loc.Host} {
		held := make([]net.Conn, 45)
		for i := range held {
			held[i] = dial(net.IPv4(127, 0, 0, 2), to)
		}
		for i, c := range held {
			if st := status(c); st == "" || strings.Contains(st, " 503 ") {
				t.Fatalf("%s: connection %d of 45 at --max-conns-per-addr 45: %q", to, i+1, st)
			}
		}
		if st := status(dial(net.IPv4(127, 0, 0, 2), to)); st != "HTTP/1.1 503 Service Unavailable" {
			t.Fatalf("%s: a 46th connection from one address at --max-conns-per-addr 45: %q, want refused 503", to, st)
		}
		if st := status(dial(net.IPv4(127, 0, 0, 4), to)); st == "" || strings.Contains(st, " 503 ") {
			t.Fatalf("%s: another address's connection: %q", to, st)
		}
	}
}

// An unknown title in --play is refused before anything starts, naming
// the title and the titles there are: up started the whole cluster, then
// failed with the front door's 404, printed twice.
func TestUpRefusesUnknownPlayTitle(t *testing.T) {
	cmd := upCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true // as the root command
	dir := t.TempDir()
	cmd.SetArgs([]string{"--data-dir", dir, "--quiet", "--rtsp-port", "0", "--http-port", "0", "--grpc-port", "0", "--metrics-port", "-1",
		"--play", "nosuch", "--once"})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), `--play "nosuch": no such title`) ||
		!strings.Contains(err.Error(), "sample-001 ... sample-020") || !strings.Contains(err.Error(), "vodctl titles") {
		t.Fatalf("up --play nosuch: %v", err)
	}
	if out.Len() != 0 {
		t.Fatalf("up --play nosuch printed:\n%s", out.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("the cluster started (%d entries in its data dir)", len(ents))
	}
}

// A failed --play is printed once: with --once it is up's error (which
// main prints), not written to the output as well; without it, written
// while the cluster goes on running.
func TestUpPlayFailureOnce(t *testing.T) {
	refused := errors.New("DESCRIBE: 404 Not Found")
	var out bytes.Buffer
	err := reportPlay(&out, "sample-009", probe.Result{}, refused, true, 5*time.Second, 200*time.Millisecond)
	if !errors.Is(err, refused) || !strings.Contains(err.Error(), "--play sample-009 failed") || out.Len() != 0 {
		t.Fatalf("with --once: %v, output %q", err, out.String())
	}
	err = reportPlay(&out, "sample-009", probe.Result{}, refused, false, 5*time.Second, 200*time.Millisecond)
	if err == nil || strings.Count(out.String(), "404 Not Found") != 1 {
		t.Fatalf("without --once: %v, output %q", err, out.String())
	}
	out.Reset()
	if err := reportPlay(&out, "sample-009", probe.Result{VideoFrames: 0}, nil, true, 5*time.Second, 200*time.Millisecond); err == nil || !strings.Contains(err.Error(), "no video frame") || out.Len() != 0 {
		t.Fatalf("no frame: %v, output %q", err, out.String())
	}
	if err := reportPlay(&out, "sample-009", probe.Result{VideoFrames: 5}, nil, true, 5*time.Second, 200*time.Millisecond); err != nil || !strings.Contains(out.String(), "5 video frames") {
		t.Fatalf("a play: %v, output %q", err, out.String())
	}
}

// A negative duration is echoed as typed, not in Go's form ("-1m30s"
// for -90s, "-24h0m0s" for -1d), before anything starts.
func TestUpDurationEchoedAsTyped(t *testing.T) {
	for flag, val := range map[string]string{"--queue-deadline": "-90s", "--origin-setup-delay": "-1d", "--play-duration": "-60m"} {
		cmd := upCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SilenceUsage = true
		dir := t.TempDir()
		cmd.SetArgs([]string{"--data-dir", dir, "--quiet", "--rtsp-port", "0", "--http-port", "0", "--grpc-port", "0", "--metrics-port", "-1",
			"--play", "sample-001", flag, val})
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "up: "+flag+" "+val+" is negative") {
			t.Errorf("%s %s: %v", flag, val, err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("%s %s: the cluster started", flag, val)
		}
	}
}

// TestUpHelpOriginZero: up takes --origin-rate-bps 0 and --origin-channels
// 0 as unlimited (its error for a negative one says so), and its help
// said nothing of it.
func TestUpHelpOriginZero(t *testing.T) {
	for _, name := range []string{"origin-rate-bps", "origin-channels"} {
		f := upCmd().Flags().Lookup(name)
		if f == nil || !strings.Contains(f.Usage, "0: unlimited") {
			t.Errorf("--%s help does not say 0 is unlimited: %+v", name, f)
		}
	}
}

// What up says it plays: --play-duration 0 plays to the end of the
// title, and was announced as "for 0s".
func TestUpPlayForSaysToTheEnd(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "to the end of the title", 5 * time.Second: "for 5s", 48 * time.Hour: "for 48h (2 days)"} {
		if got := playFor(d); got != want {
			t.Errorf("playFor(%v) = %q, want %q", d, got, want)
		}
	}
}

// A --play that fails with --once is up's error alone, not also written
// to the output (it was printed twice), worded as vodctl play's: run for real, with a node egress
// no title fits in, so that the front door answers 453 after
// --queue-deadline.
func TestUpOncePlayFailurePrintedOnce(t *testing.T) {
	cmd := upCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true // as the root command
	cmd.SetArgs([]string{"--data-dir", t.TempDir(), "--quiet", "--rtsp-port", "0", "--http-port", "0", "--grpc-port", "0", "--metrics-port", "-1",
		"--node-egress-bps", "1000", "--queue-deadline", "100ms", "--play", "sample-001", "--once"})
	err := cmd.Execute()
	// Worded as vodctl play words it (probe.Explain): it said "probe:
	// DESCRIBE: bad status code: 453 (Not Enough Bandwidth)".
	if err == nil || !strings.Contains(err.Error(), "--play sample-001 failed: the manager at ") ||
		!strings.Contains(err.Error(), " refused DESCRIBE: RTSP 453 Not Enough Bandwidth") || strings.Contains(err.Error(), "bad status code") {
		t.Fatalf("up --play with no egress for it: %v", err)
	}
	// Not "453" alone: a port or the temporary directory may hold it.
	if !strings.Contains(out.String(), "playing rtsp://") || strings.Contains(out.String(), "bad status code") || strings.Contains(out.String(), "failed") {
		t.Fatalf("up --once printed the failure as well as returning it:\n%s", out.String())
	}
	// The line saying what it plays masks the password, as the result
	// line and vodctl do: it showed rtsp://demo:demo@ (the banner's
	// commands above it show it, to be copied).
	_, playing, _ := strings.Cut(out.String(), "\nplaying ")
	if playing, _, _ = strings.Cut(playing, "\n"); !strings.HasPrefix(playing, "rtsp://demo:xxxxx@") {
		t.Fatalf("up --play's playing line %q: want the password masked, rtsp://demo:xxxxx@", playing)
	}
}

// up --host takes an IPv6 address in brackets, as written in a URL, for
// the address itself: "[::1]" was refused as "listen tcp: address
// [[::1]]:0: missing port in address: give an address of this machine",
// and "[::]" (every address) by that same listen rather than as every
// address.
func TestUpHostInBrackets(t *testing.T) {
	for in, want := range map[string]string{"[::1]": "::1", "[::]": "::", "::1": "::1", "[fe80::1%lo]": "fe80::1%lo",
		"localhost": "localhost", "[localhost]": "[localhost]", "127.0.0.1": "127.0.0.1", "[::1": "[::1"} {
		if got := unbracketHost(in); got != want {
			t.Errorf("unbracketHost(%q) = %q, want %q", in, got, want)
		}
	}
	if l, err := net.Listen("tcp", "[::1]:0"); err != nil {
		t.Logf("no IPv6 loopback here (%v): --host [::1] not tried", err)
	} else {
		l.Close()
		if err := checkUpHost(unbracketHost("[::1]")); err != nil {
			t.Errorf("--host [::1]: %v", err)
		}
	}
	cmd := upCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SilenceUsage = true
	cmd.SetArgs([]string{"--data-dir", t.TempDir(), "--quiet", "--host", "[::]"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--host :: means every address") {
		t.Fatalf("--host [::]: %v, want it refused as every address", err)
	}
}
