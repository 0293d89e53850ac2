package vodnode

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/cdp/tsindex"
	"vodcluster/proto/token"
	pb "vodcluster/proto/vodcluster/v1"
)

var testSecret = []byte("test-secret-0123456789abcdef")

// fakeOrigin is an in-test Origin: a catalog of sample clips, a setup delay
// per transfer, an optional rate limit and a fetch counter.
type fakeOrigin struct {
	pb.UnimplementedOriginServer
	titles map[string][]byte // set before the origin serves, then by replace (o.mu)
	delay  time.Duration
	rate   int64 // bytes/s per transfer; 0 = unlimited
	fail   atomic.Bool
	failAt atomic.Int64 // > 0: transfers send the bytes below it, then fail (DataLoss)
	// replaced: transfers are refused as the CDP refuses those naming the
	// version of a file written over since (FailedPrecondition, once it
	// has read the new file), while the catalog still gives the old
	// version.
	replaced atomic.Bool
	// holdAt > 0: a fill's transfer (not no_wait) sends the bytes below
	// it, then waits for release to be closed (a fill held mid-way; its
	// retries too). Set before the origin serves.
	holdAt  int64
	release chan struct{}
	// holdFirst: a fill's transfer (not no_wait) waits for release before
	// its first byte. Set before the origin serves.
	holdFirst   bool
	releaseOnce sync.Once
	// busyNoWait: a transfer asked with no_wait is refused
	// RESOURCE_EXHAUSTED, as by a CDP with no channel free (counted in
	// busyRefusals).
	busyNoWait   atomic.Bool
	busyRefusals atomic.Int64
	// holdRanges: a no_wait transfer (a range read, not a fill) sends its
	// first chunk, then waits for release. Set before the origin serves.
	holdRanges bool
	// rangeLengths: the length asked by every no_wait transfer, in order.
	rangeLengths []int64

	mu      sync.Mutex
	fetches map[string]int
	offsets map[string][]int64 // every fetch's offset, per title
	lists   int
	done    map[string]chan struct{} // closed when a transfer of the title first completes
}

func clip(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../cdp/samples/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newFakeOrigin(t testing.TB) *fakeOrigin {
	o := &fakeOrigin{titles: map[string][]byte{}, fetches: map[string]int{}, done: map[string]chan struct{}{}}
	a, b, c := clip(t, "clip-a.ts"), clip(t, "clip-b.ts"), clip(t, "clip-c.ts")
	for i, d := range [][]byte{a, b, c, a, b, c, a, b, c} {
		o.titles[fmt.Sprintf("sample-%03d", i+1)] = d
	}
	for i, d := range [][]byte{a, b, c} {
		o.titles[fmt.Sprintf("short-%03d", i+1)] = prefix(t, d, shortSeconds)
	}
	return o
}

// shortSeconds is the play time of the short-NNN titles of the fake
// origin, for tests that play a whole title.
const shortSeconds = 6

// prefix returns the first d seconds of an MPEG-TS title (cut at a PCR).
func prefix(t testing.TB, data []byte, d float64) []byte {
	t.Helper()
	x, err := tsindex.BuildFrom(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range x.PCRs {
		if float64(p.PCR-x.PCRs[0].PCR)/tsindex.PCRHz >= d {
			return data[:p.Offset]
		}
	}
	return data
}

func (o *fakeOrigin) ListTitles(context.Context, *pb.ListTitlesRequest) (*pb.ListTitlesResponse, error) {
	o.mu.Lock()
	o.lists++
	titles := maps.Clone(o.titles)
	o.mu.Unlock()
	res := &pb.ListTitlesResponse{}
	for id, d := range titles {
		x, _ := tsindex.BuildFrom(bytes.NewReader(d))
		res.Titles = append(res.Titles, &pb.Title{Id: id, Name: id, DurationS: x.Duration(), BitrateBps: int64(float64(len(d)) * 8 / x.Duration()),
			SizeBytes: int64(len(d)), Version: titleVersion(d), HlsSegmentMaxS: x.LongestSegment(tsindex.HLSSegmentTarget)})
	}
	return res, nil
}

// titleVersion is a title's version as the CDP gives it (the first 128
// bits of its SHA-256, hex).
func titleVersion(d []byte) string {
	sum := sha256.Sum256(d)
	return hex.EncodeToString(sum[:16])
}

func (o *fakeOrigin) Fetch(req *pb.FetchRequest, stream grpc.ServerStreamingServer[pb.FetchChunk]) error {
	o.mu.Lock()
	d, ok := o.titles[req.GetTitleId()]
	o.mu.Unlock()
	if !ok {
		return status.Errorf(codes.NotFound, "no title %q", req.GetTitleId())
	}
	if o.replaced.Load() {
		return status.Errorf(codes.FailedPrecondition, "title %q is version %s at the origin, not the one asked (test)", req.GetTitleId(), titleVersion(d))
	}
	if req.GetNoWait() && o.busyNoWait.Load() {
		o.busyRefusals.Add(1)
		return status.Error(codes.ResourceExhausted, "every transfer channel is busy (test)")
	}
	if v := req.GetIfVersion(); v != "" && v != titleVersion(d) {
		return status.Errorf(codes.FailedPrecondition, "title %q is version %s at the origin, not %s", req.GetTitleId(), titleVersion(d), v)
	}
	o.mu.Lock()
	o.fetches[req.GetTitleId()]++
	if o.offsets == nil {
		o.offsets = map[string][]int64{}
	}
	o.offsets[req.GetTitleId()] = append(o.offsets[req.GetTitleId()], req.GetOffset())
	if req.GetNoWait() {
		o.rangeLengths = append(o.rangeLengths, req.GetLength())
	}
	done := o.done[req.GetTitleId()]
	if done == nil {
		done = make(chan struct{})
		o.done[req.GetTitleId()] = done
	}
	o.mu.Unlock()
	select {
	case <-time.After(o.delay):
	case <-stream.Context().Done():
		return stream.Context().Err()
	}
	if o.holdFirst && !req.GetNoWait() {
		select {
		case <-o.release:
		case <-stream.Context().Done():
			return stream.Context().Err()
		}
	}
	const chunk = 32 << 10
	start := time.Now()
	last := int64(len(d))
	if l := req.GetLength(); l > 0 {
		last = min(last, req.GetOffset()+l)
	}
	for off, end := req.GetOffset(), int64(0); off < last; off = end {
		if o.holdRanges && req.GetNoWait() && off > req.GetOffset() {
			select {
			case <-o.release:
			case <-stream.Context().Done():
				return stream.Context().Err()
			}
		}
		if o.fail.Load() && off > 0 {
			return status.Error(codes.DataLoss, "origin failure (test)")
		}
		if o.rate > 0 {
			due := start.Add(time.Duration(float64(off-req.GetOffset()) / float64(o.rate) * float64(time.Second)))
			select {
			case <-time.After(time.Until(due)):
			case <-stream.Context().Done():
				return stream.Context().Err()
			}
		}
		end = min(off+chunk, last)
		if h := o.holdAt; h > 0 && !req.GetNoWait() {
			if off >= h {
				select {
				case <-o.release:
				case <-stream.Context().Done():
					return stream.Context().Err()
				}
			} else {
				end = min(end, h)
			}
		}
		if fa := o.failAt.Load(); fa > 0 {
			if off >= fa {
				return status.Error(codes.DataLoss, "origin failure at a set offset (test)")
			}
			end = min(end, fa)
		}
		if err := stream.Send(&pb.FetchChunk{Offset: off, Data: d[off:end]}); err != nil {
			return err
		}
	}
	o.mu.Lock()
	select {
	case <-done: // an earlier transfer of the title completed
	default:
		close(done)
	}
	o.mu.Unlock()
	return nil
}

// lengths returns the length asked by every no_wait transfer so far.
func (o *fakeOrigin) lengths() []int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.rangeLengths)
}

// unhold releases the transfers held at holdAt, and those to come.
func (o *fakeOrigin) unhold() { o.releaseOnce.Do(func() { close(o.release) }) }

// replace puts data at the origin as title id, in place of its bytes
// there (an operator's new file renamed over the title's), for transfers
// and catalog reads from then on.
func (o *fakeOrigin) replace(id string, data []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.titles[id] = data
}

// fetchOffsets returns the offset of every fetch of title id, in order.
func (o *fakeOrigin) fetchOffsets(id string) []int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]int64(nil), o.offsets[id]...)
}

func (o *fakeOrigin) fetchCount(id string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.fetches[id]
}

func (o *fakeOrigin) doneCh(id string) chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done[id] == nil {
		o.done[id] = make(chan struct{})
	}
	return o.done[id]
}

// serveGRPC serves register on a loopback port and returns its address.
func serveGRPC(t testing.TB, register func(*grpc.Server)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.KeepaliveEnforcementPolicy(pb.KeepaliveEnforcement))
	register(s)
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return l.Addr().String()
}

func startOrigin(t testing.TB, o *fakeOrigin) string {
	return serveGRPC(t, func(s *grpc.Server) { pb.RegisterOriginServer(s, o) })
}

// startNode starts a node with the given origin (and options applied).
func startNode(t testing.TB, originAddr string, opts ...func(*Node)) *Node {
	t.Helper()
	n := &Node{ID: "node-1", DataDir: t.TempDir(), OriginAddr: originAddr, Secret: testSecret, Pacers: 1, Logger: testLogger()}
	for _, o := range opts {
		o(n)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// mint signs an admission token.
func mint(t testing.TB, sid, title, node, client string, ttl time.Duration) string {
	t.Helper()
	s, err := token.NewSigner(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.Sign(token.Claims{Session: sid, Title: title, Node: node, Client: client}, time.Now(), ttl)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func nodeURL(n *Node, tok, title string) string {
	return "rtsp://" + n.RTSPAddr() + "/s/" + tok + "/vod/" + title
}

// ffmpegResult is what a real client decoded.
type ffmpegResult struct {
	frames  int
	elapsed time.Duration
	// paced is the time from ffmpeg's first decoded frame (its progress
	// report, every 0.1 s) to its end: the play's pace, ffmpeg's start and
	// probe (seconds on a loaded machine) left out; 0 without a frame
	paced  time.Duration
	stderr string
}

// runFFmpeg plays url for seconds with ffmpeg and counts decoded frames.
func runFFmpeg(t testing.TB, url, transport string, seconds float64, extra ...string) ffmpegResult {
	t.Helper()
	return runFFmpegArgs(t, seconds, append(append([]string{"-rtsp_transport", transport}, extra...), "-i", url)...)
}

// runFFmpegArgs runs ffmpeg with input arguments in, decoding seconds of
// video to nothing, and counts the frames.
func runFFmpegArgs(t testing.TB, seconds float64, in ...string) ffmpegResult {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds*float64(time.Second))+20*time.Second)
	defer cancel()
	args := append([]string{"-hide_banner", "-nostats", "-loglevel", "error"}, in...)
	args = append(args, "-t", strconv.FormatFloat(seconds, 'f', 3, 64), "-map", "0:v", "-f", "null", "-progress", "pipe:1", "-stats_period", "0.1", "-")
	cmd := exec.CommandContext(ctx, "ffmpeg", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	frames := 0
	var first time.Time
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "frame="); ok {
			if frames, _ = strconv.Atoi(strings.TrimSpace(v)); frames > 0 && first.IsZero() {
				first = time.Now()
			}
		}
	}
	err = cmd.Wait()
	r := ffmpegResult{frames: frames, elapsed: time.Since(start), stderr: stderr.String()}
	if !first.IsZero() {
		r.paced = time.Since(first)
	}
	if err != nil {
		t.Logf("ffmpeg: %v\n%s", err, r.stderr)
	}
	return r
}

// waitForMin is the least bound of waitFor.
const waitForMin = 10 * time.Second

// waitFor polls cond every 10 ms until it holds or d passes; d is at
// least waitForMin, a bound for a loaded CI machine under the race
// detector (the wait ends as soon as cond holds).
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	d = max(d, waitForMin)
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testLogger logs warnings and errors to stderr (-v shows info: VODNODE_DEBUG=1).
func testLogger() *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("VODNODE_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}
