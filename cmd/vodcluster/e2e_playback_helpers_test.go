package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/cdp/tsindex"
	v1 "vodcluster/proto/vodcluster/v1"
	"vodcluster/vodnode"
)

// End-to-end tests of VOD playback through the front door with
// the real clients subscribers use: ffmpeg (seek with -ss), GStreamer's
// rtspsrc to the end of a title, VLC over HTTP, a scripted RTSP client
// for the VCR commands, keepalives and timeouts, and admission at
// capacity. They run in parallel with each other (each its own cluster).

// startPlaybackCluster starts a cluster whose nodes are configured by
// node (on top of what startCluster sets), registered with its manager.
func startPlaybackCluster(t *testing.T, nodes int, egress int64, node func(*vodnode.Node)) *cluster {
	t.Helper()
	c := startTestCluster(t, 0, egress, nil)
	for i := 1; i <= nodes; i++ {
		id := fmt.Sprintf("node-%d", i)
		n := &vodnode.Node{
			ID: id, DataDir: filepath.Join(c.opts.DataDir, id), RTSPListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0",
			Capacity:    vodnode.Capacity{EgressBps: egress, DiskBytes: c.opts.NodeDisk},
			ManagerAddr: c.manager.GRPCAddr(), OriginAddr: c.origin.Addr(), Secret: c.secret,
			HeartbeatInterval: c.opts.Heartbeat, Logger: c.opts.Logger.With("component", "node"),
		}
		if node != nil {
			node(n)
		}
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := c.waitNodes(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	return c
}

// rtspc is a scripted RTSP client: raw requests, parsed responses and the
// interleaved frames in between.
type rtspc struct {
	t    *testing.T
	mu   sync.Mutex
	c    net.Conn
	br   *bufio.Reader
	cseq int
	auth string
}

func dialRTSPC(t *testing.T, hostport, user, pw string) *rtspc {
	t.Helper()
	c, err := net.Dial("tcp", hostport)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := &rtspc{t: t, c: c, br: bufio.NewReader(c)}
	if user != "" {
		r.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))
	}
	return r
}

// send writes a request; do also reads its response.
func (r *rtspc) send(method, u string, hdr ...string) {
	r.t.Helper()
	if err := r.write(method, u, hdr...); err != nil {
		r.t.Fatal(err)
	}
}

// write writes a request and returns the error (for goroutines other than
// the test's, which cannot call t.Fatal).
func (r *rtspc) write(method, u string, hdr ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cseq++
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s RTSP/1.0\r\nCSeq: %d\r\n", method, u, r.cseq)
	if r.auth != "" {
		fmt.Fprintf(&b, "Authorization: %s\r\n", r.auth)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", hdr[i], hdr[i+1])
	}
	b.WriteString("\r\n")
	_, err := io.WriteString(r.c, b.String())
	return err
}

func (r *rtspc) do(method, u string, hdr ...string) *base.Response {
	r.t.Helper()
	r.send(method, u, hdr...)
	r.c.SetReadDeadline(time.Now().Add(15 * time.Second))
	for {
		p, err := r.br.Peek(1)
		if err != nil {
			r.t.Fatalf("%s: %v", method, err)
		}
		if p[0] == '$' {
			if _, _, err := r.frame(); err != nil {
				r.t.Fatal(err)
			}
			continue
		}
		var res base.Response
		if err := res.Unmarshal(r.br); err != nil {
			r.t.Fatalf("%s: %v", method, err)
		}
		return &res
	}
}

// frame reads one interleaved frame.
func (r *rtspc) frame() (int, []byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r.br, h[:]); err != nil {
		return 0, nil, err
	}
	if h[0] != '$' {
		return 0, nil, fmt.Errorf("not a frame: %q", h[0])
	}
	b := make([]byte, int(h[2])<<8|int(h[3]))
	_, err := io.ReadFull(r.br, b)
	return int(h[1]), b, err
}

// rtpFor counts the RTP packets (even channels) read during d; last is
// the sequence number of the last one.
func (r *rtspc) rtpFor(d time.Duration) (n int, last uint16) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		r.c.SetReadDeadline(end)
		if _, err := r.br.Peek(1); err != nil {
			return n, last
		}
		// A frame has begun: it is read whole, past the end if need be
		// (a deadline in its middle would leave the rest of it to be
		// read as the next response).
		r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		ch, b, err := r.frame()
		if err != nil {
			r.t.Fatalf("interleaved frame: %v", err)
		}
		if ch%2 == 0 && len(b) >= 4 {
			n, last = n+1, uint16(b[2])<<8|uint16(b[3])
		}
	}
	return n, last
}

// nptStart returns the start of a response's Range (npt=<start>-), -1
// when there is none.
func nptStart(res *base.Response) float64 {
	v := res.Header["Range"]
	if len(v) != 1 {
		return -1
	}
	start, _, _ := strings.Cut(strings.TrimPrefix(v[0], "npt="), "-")
	f, err := strconv.ParseFloat(start, 64)
	if err != nil {
		return -1
	}
	return f
}

func sessionOf(res *base.Response) string {
	if v := res.Header["Session"]; len(v) > 0 {
		id, _, _ := strings.Cut(v[0], ";")
		return id
	}
	return ""
}

// redirect asks the front door for title (DESCRIBE as demo) and returns
// the node URL of its 302.
func redirect(t *testing.T, c *cluster, title string) string {
	t.Helper()
	res := dialRTSPC(t, c.manager.RTSPAddr(), "demo", "demo").do("DESCRIBE", c.frontURL("", "", title))
	if res.StatusCode != base.StatusFound || len(res.Header["Location"]) != 1 {
		t.Fatalf("front door DESCRIBE: %d %v", res.StatusCode, res.Header)
	}
	return res.Header["Location"][0]
}

// sessions returns the manager's session table as id -> state.
func sessions(t *testing.T, adm v1.AdminClient) map[string]*v1.SessionInfo {
	t.Helper()
	r, err := adm.ListSessions(context.Background(), &v1.ListSessionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*v1.SessionInfo{}
	for _, s := range r.Sessions {
		out[s.SessionId] = s
	}
	return out
}

// reservedBps sums the bit/s the manager holds reserved on the nodes.
func reservedBps(t *testing.T, adm v1.AdminClient) int64 {
	t.Helper()
	r, err := adm.ListNodes(context.Background(), &v1.ListNodesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, n := range r.Nodes {
		sum += n.ReservedBps
	}
	return sum
}

var ptsTimeRe = regexp.MustCompile(`pts_time:([0-9.]+)`)

var startRe = regexp.MustCompile(`Duration: .*, start: ([0-9.]+)`)

// showFrames decodes frames video frames of an RTSP URL with ffmpeg (extra
// input options first), keeping the stream's timestamps, and returns the
// presentation time of each (showinfo), the input's start time as ffmpeg
// reports it, the wall time taken and ffmpeg's output (its log).
func showFrames(t *testing.T, u, transport string, frames int, extra ...string) ([]float64, float64, time.Duration, string) {
	t.Helper()
	ff := needTool(t, "ffmpeg")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	args := append([]string{"-hide_banner", "-nostdin", "-rtsp_transport", transport}, extra...)
	args = append(args, "-i", u, "-copyts", "-map", "0:v:0", "-frames:v", strconv.Itoa(frames), "-vf", "showinfo", "-f", "null", "-")
	start := time.Now()
	b, err := exec.CommandContext(ctx, ff, args...).CombinedOutput()
	took, out := time.Since(start), string(b)
	if err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", args, err, out)
	}
	var pts []float64
	for _, m := range ptsTimeRe.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		pts = append(pts, v)
	}
	m := startRe.FindStringSubmatch(out)
	if len(pts) < frames || m == nil {
		t.Fatalf("%d frames shown, start %v:\n%s", len(pts), m, out)
	}
	st, _ := strconv.ParseFloat(m[1], 64)
	return pts[:frames], st, took, out
}

// sampleIndex indexes the sample clip a title of the test cluster's
// origin is made of (sample-NNN: clip a, b, c round robin).
func sampleIndex(t *testing.T, c *cluster, title string) *tsindex.Index {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimPrefix(title, "sample-"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(c.opts.DataDir, "cdp", fmt.Sprintf("clip-%c.ts", "abc"[(n-1)%3])))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	idx, err := tsindex.BuildFrom(f)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}
