package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"vodcluster/acm"
	"vodcluster/acm/boss"
	v1 "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// toolPackage names the Debian package of each tool the tests drive
// (README.md lists them): a missing cvlc or promtool was answered with
// "apt-get install ffmpeg", which installs neither. cvlc needs
// vlc-plugin-base too (VLC's HTTP access and MPEG-TS demuxer): vlc-bin
// neither depends on nor recommends it.
var toolPackage = map[string]string{
	"ffmpeg": "ffmpeg", "ffprobe": "ffmpeg", "gst-launch-1.0": "gstreamer1.0-tools gstreamer1.0-plugins-good gstreamer1.0-plugins-bad",
	"cvlc": "vlc-bin vlc-plugin-base", "promtool": "prometheus",
}

// needTool returns the path of a real client the end-to-end tests drive;
// CI installs them (.ci/run), so a missing one is a failure, not a skip.
// The failure names the package to install.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s", missingToolMessage(name))
	}
	return p
}

// missingToolMessage says that name is not on PATH and which package has it.
func missingToolMessage(name string) string {
	pkg := toolPackage[name]
	if pkg == "" {
		pkg = name
	}
	return fmt.Sprintf("%s not found: the end-to-end tests drive real clients and tools (apt-get install %s)", name, pkg)
}

// testUsers: demo sees every package, basic only "basic" (sample-001..010).
func testUsers(t *testing.T) []boss.User {
	t.Helper()
	var us []boss.User
	for _, u := range []struct {
		name, pw string
		pk       []string
	}{{"demo", "demo", []string{boss.AllPackages}}, {"basic", "basicpw", []string{"basic"}}} {
		x, err := boss.NewUser(u.name, u.pw, acm.DefaultRealm, u.pk)
		if err != nil {
			t.Fatal(err)
		}
		us = append(us, x)
	}
	return us
}

func quietLogger() *slog.Logger {
	if os.Getenv("VODCLUSTER_TEST_LOG") != "" {
		return slog.Default()
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startTestCluster starts a cluster on 127.0.0.1 with any free ports.
func startTestCluster(t *testing.T, nodes int, egress int64, mutate func(*clusterOptions)) *cluster {
	t.Helper()
	opts := clusterOptions{
		DataDir:            t.TempDir(),
		Host:               "127.0.0.1",
		Nodes:              nodes,
		NodeEgress:         egress,
		NodeDisk:           64 << 20,
		Users:              testUsers(t),
		OriginSetupDelay:   100 * time.Millisecond,
		OriginRateBps:      4_000_000,
		OriginMaxTransfers: 4,
		QueueDeadline:      time.Second,
		Heartbeat:          200 * time.Millisecond,
		// Never off-peak: the planner behaves the same at any time of day
		// the tests run (off-peak it prefetches with every free origin
		// channel, and a viewer's fill may wait for one).
		OffPeak: smm.Window{Start: time.Hour, End: time.Hour},
		Logger:  quietLogger(),
	}
	if mutate != nil {
		mutate(&opts)
	}
	c, err := startCluster(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := c.waitNodes(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *cluster) admin(t *testing.T) v1.AdminClient {
	t.Helper()
	conn, err := grpc.NewClient(c.manager.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return v1.NewAdminClient(conn)
}

func (c *cluster) frontURL(user, pw, title string) string {
	if user == "" {
		return fmt.Sprintf("rtsp://%s/vod/%s", c.manager.RTSPAddr(), title)
	}
	return fmt.Sprintf("rtsp://%s:%s@%s/vod/%s", user, pw, c.manager.RTSPAddr(), title)
}

// ffmpegPlay is one real-client play: ffmpeg decodes secs seconds of the
// URL's video to nothing.
type ffmpegPlay struct {
	Frames int           // decoded video frames
	Wall   time.Duration // wall time of the whole run (connect to exit)
	Out    string        // ffmpeg's stderr
	Err    error
}

var frameRe = regexp.MustCompile(`frame=\s*(\d+)`)

func runFFmpeg(t *testing.T, url, transport string, secs float64) ffmpegPlay {
	t.Helper()
	return ffmpegRun(t, secs, "-rtsp_transport", transport, "-i", url)
}

// runFFmpegInput plays a non-RTSP input (HTTP, HLS).
func runFFmpegInput(t *testing.T, url string, secs float64) ffmpegPlay {
	t.Helper()
	return ffmpegRun(t, secs, "-i", url)
}

func ffmpegRun(t *testing.T, secs float64, input ...string) ffmpegPlay {
	t.Helper()
	ff := needTool(t, "ffmpeg")
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs*float64(time.Second))+40*time.Second)
	defer cancel()
	args := append([]string{"-hide_banner", "-nostdin"}, input...)
	args = append(args, "-map", "0:v:0", "-t", strconv.FormatFloat(secs, 'f', 2, 64), "-f", "null", "-")
	start := time.Now()
	out, err := exec.CommandContext(ctx, ff, args...).CombinedOutput()
	p := ffmpegPlay{Wall: time.Since(start), Out: string(out), Err: err}
	if m := frameRe.FindAllStringSubmatch(p.Out, -1); len(m) > 0 {
		p.Frames, _ = strconv.Atoi(m[len(m)-1][1])
	}
	return p
}

// rtspStatus runs ffprobe on url and returns its output (which names the
// RTSP status of a refused DESCRIBE, e.g. "401 Unauthorized").
func rtspStatus(t *testing.T, url string) (string, time.Duration) {
	t.Helper()
	fp := needTool(t, "ffprobe")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	out, _ := exec.CommandContext(ctx, fp, "-hide_banner", "-rtsp_transport", "tcp", url).CombinedOutput()
	return string(out), time.Since(start)
}

// eventually polls cond every 20 ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nodeFills sums the fills the nodes started for title.
func (c *cluster) nodeFills(title string) int {
	n := 0
	for _, nd := range c.nodes {
		n += nd.Stats().FillsStarted[title]
	}
	return n
}

// holders returns the ids of nodes whose store holds title completely.
func (c *cluster) holders(title string) []string {
	var out []string
	for _, nd := range c.nodes {
		for _, s := range nd.Titles() {
			if s.ID == title && !s.Filling && s.Stored == s.Size {
				out = append(out, nd.ID)
			}
		}
	}
	return out
}

func fileExists(p ...string) bool {
	_, err := os.Stat(filepath.Join(p...))
	return err == nil
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}

// restartablePorts sets the cluster's front door and gRPC ports to free
// ports below Linux's ephemeral range (portBelowEphemeral), for tests
// that restart the manager on the same addresses.
func restartablePorts(t *testing.T) func(*clusterOptions) {
	t.Helper()
	rtsp, http, grpc := portBelowEphemeral(t), portBelowEphemeral(t), portBelowEphemeral(t)
	return func(o *clusterOptions) { o.RTSPPort, o.HTTPPort, o.GRPCPort = rtsp, http, grpc }
}

// portBelowEphemeral returns a loopback port nothing listens on, below
// Linux's ephemeral range (32768-60999 by default), for a server that
// listens on it later (a restart on the same address, an address written
// in a config file): a port from the ephemeral range, freed meanwhile,
// can be taken as the local port of any outgoing connection or by any
// listener on port 0 on the machine, and the listen then fails with
// "address already in use".
func portBelowEphemeral(t *testing.T) int {
	t.Helper()
	for range 200 {
		p := 20000 + rand.IntN(12000)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err == nil {
			ln.Close()
			return p
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return 0
}
