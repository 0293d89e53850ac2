package cdp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	vodclusterv1 "vodcluster/proto/vodcluster/v1"
)

var quiet = slog.New(slog.DiscardHandler)

// fakeClock counts the delays transfers ask for instead of waiting them.
// With a gate, every Sleep blocks until the gate is closed (or the
// transfer's context ends), which holds the transfer's channel.
type fakeClock struct {
	gate    chan struct{}      // nil: never block
	entered chan time.Duration // every Sleep reports here first (buffered)

	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock(gated bool) *fakeClock {
	c := &fakeClock{entered: make(chan time.Duration, 1024), now: time.Unix(1_700_000_000, 0)}
	if gated {
		c.gate = make(chan struct{})
	}
	return c
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	select {
	case c.entered <- d:
	default:
	}
	if c.gate != nil {
		select {
		case <-c.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.sleeps = append(c.sleeps, d)
	return nil
}

func (c *fakeClock) recorded() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// waitEntered waits for n Sleeps to start.
func (c *fakeClock) waitEntered(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for range n {
		select {
		case <-c.entered:
		case <-deadline:
			t.Fatalf("fewer than %d transfers reached their setup delay", n)
		}
	}
}

// startServer starts an origin on the sample titles over 127.0.0.1:0 with
// the settings set by configure (the catalog is not watched unless it sets
// CatalogPoll), and returns it with a client.
func startServer(t *testing.T, configure func(*Server)) (*Server, vodclusterv1.OriginClient) {
	t.Helper()
	s := &Server{Dir: sampleDir(t), Listen: "127.0.0.1:0", Logger: quiet, CatalogPoll: -1}
	if configure != nil {
		configure(s)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, vodclusterv1.NewOriginClient(mustConn(t, s.Addr()))
}

// fetch runs a Fetch to the end and returns the bytes, checking that the
// first message is the transfer's start (FetchChunk.started, no data, at
// the asked offset) and the chunks after it contiguous from the asked
// offset and at most max bytes each.
func fetch(ctx context.Context, c vodclusterv1.OriginClient, req *vodclusterv1.FetchRequest, max int) ([]byte, error) {
	stream, err := c.Fetch(ctx, req)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	started := false
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return buf.Bytes(), nil
		}
		if err != nil {
			return buf.Bytes(), err
		}
		if chunk.GetStarted() {
			if started || chunk.GetOffset() != req.GetOffset() || len(chunk.GetData()) != 0 {
				return nil, status.Errorf(codes.DataLoss, "started message at %d with %d bytes (one before: %v), want one, first, at %d with none",
					chunk.GetOffset(), len(chunk.GetData()), started, req.GetOffset())
			}
			started = true
			continue
		}
		if !started {
			return nil, status.Errorf(codes.DataLoss, "chunk at %d before the started message", chunk.GetOffset())
		}
		if want := req.GetOffset() + int64(buf.Len()); chunk.GetOffset() != want {
			return nil, status.Errorf(codes.DataLoss, "chunk at %d, want %d", chunk.GetOffset(), want)
		}
		if len(chunk.GetData()) == 0 || len(chunk.GetData()) > max {
			return nil, status.Errorf(codes.DataLoss, "chunk of %d bytes", len(chunk.GetData()))
		}
		buf.Write(chunk.GetData())
	}
}

// waitStats polls the server's counters until ok holds, for at most 10 s.
func waitStats(t *testing.T, s *Server, what string, ok func(Stats) bool) Stats {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := s.Stats()
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; stats %+v", what, st)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func wantCode(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("error %v, want code %v", err, code)
	}
	if !strings.Contains(status.Convert(err).Message(), msg) {
		t.Fatalf("message %q does not contain %q", status.Convert(err).Message(), msg)
	}
}

func TestListTitles(t *testing.T) {
	s, c := startServer(t, nil)
	resp, err := c.ListTitles(context.Background(), &vodclusterv1.ListTitlesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := resp.GetTitles()
	want := s.Catalog().Titles()
	if len(got) != 20 || len(want) != 20 {
		t.Fatalf("%d titles over gRPC, %d in the catalog", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.GetId() != w.ID || g.GetName() != w.Name || g.GetPackage() != w.Package ||
			g.GetSizeBytes() != w.SizeBytes || g.GetBitrateBps() != w.BitrateBps || g.GetDurationS() != w.DurationS ||
			g.GetVersion() != w.Version || len(w.Version) != 32 {
			t.Errorf("title %d: %v, want %+v", i, g, w)
		}
	}

	hc := healthpb.NewHealthClient(mustConn(t, s.Addr()))
	h, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health %v, %v", h, err)
	}
}

func grpcConn(addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

func mustConn(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpcConn(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestFetchWhole(t *testing.T) {
	s, c := startServer(t, nil)
	clip := readClip(t, "clip-a.ts")
	got, err := fetch(context.Background(), c, &vodclusterv1.FetchRequest{TitleId: "sample-004"}, DefaultChunkBytes)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, clip) {
		t.Fatalf("got %d bytes, not the %d of clip-a.ts", len(got), len(clip))
	}
	st := s.Stats()
	if st.Transfers != 1 || st.TitleTransfers["sample-004"] != 1 || len(st.TitleTransfers) != 1 ||
		st.BytesSent != int64(len(clip)) || st.Active != 0 || st.PeakActive != 1 || st.Waiting != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestFetchRanges(t *testing.T) {
	const chunk = 10 * 188
	s, c := startServer(t, func(s *Server) { s.ChunkBytes = chunk })
	clip := readClip(t, "clip-b.ts")
	size := int64(len(clip))
	cases := []struct {
		off, length int64
		want        []byte
	}{
		{0, 188, clip[:188]},
		{0, chunk, clip[:chunk]},
		{1000, 5000, clip[1000:6000]}, // not packet-aligned
		{188 * 7, 3 * chunk, clip[188*7 : 188*7+3*chunk]},
		{size - 100, 0, clip[size-100:]},
		{size - 100, 1000, clip[size-100:]}, // runs past the end: clamped
		{0, size + 1, clip},
		{size, 0, nil}, // empty range at the end
		{size, 5, nil},
	}
	var sent int64
	transfers := int64(0)
	for _, tc := range cases {
		got, err := fetch(context.Background(), c, &vodclusterv1.FetchRequest{TitleId: "sample-002", Offset: tc.off, Length: tc.length}, chunk)
		if err != nil {
			t.Fatalf("[%d,+%d): %v", tc.off, tc.length, err)
		}
		if !bytes.Equal(got, tc.want) {
			t.Errorf("[%d,+%d): got %d bytes, want %d", tc.off, tc.length, len(got), len(tc.want))
		}
		sent += int64(len(tc.want))
		if len(tc.want) > 0 {
			transfers++
		}
	}
	if st := s.Stats(); st.BytesSent != sent || st.Transfers != transfers {
		t.Errorf("stats %+v, want %d bytes in %d transfers", st, sent, transfers)
	}
}

func TestFetchErrors(t *testing.T) {
	s, c := startServer(t, nil)
	size := s.Catalog().Titles()[0].SizeBytes
	ctx := context.Background()
	_, err := fetch(ctx, c, &vodclusterv1.FetchRequest{TitleId: "sample-999"}, DefaultChunkBytes)
	wantCode(t, err, codes.NotFound, `"sample-999"`)
	// as GetTitle answers them: an empty id is the caller's mistake, and
	// a huge one is not echoed whole
	_, err = fetch(ctx, c, &vodclusterv1.FetchRequest{TitleId: ""}, DefaultChunkBytes)
	wantCode(t, err, codes.InvalidArgument, "title_id is empty")
	long := strings.Repeat("x", 10_000)
	_, err = fetch(ctx, c, &vodclusterv1.FetchRequest{TitleId: long}, DefaultChunkBytes)
	wantCode(t, err, codes.NotFound, "… (10000 bytes)")
	if len(status.Convert(err).Message()) > 300 {
		t.Errorf("Fetch of a 10 kB id: a %d-byte message", len(status.Convert(err).Message()))
	}
	_, err = c.GetTitle(ctx, &vodclusterv1.GetTitleRequest{TitleId: long})
	wantCode(t, err, codes.NotFound, "… (10000 bytes)")
	if len(status.Convert(err).Message()) > 300 {
		t.Errorf("GetTitle of a 10 kB id: a %d-byte message", len(status.Convert(err).Message()))
	}
	_, err = fetch(ctx, c, &vodclusterv1.FetchRequest{TitleId: "sample-001", Offset: -1}, DefaultChunkBytes)
	wantCode(t, err, codes.InvalidArgument, "offset -1")
	_, err = fetch(ctx, c, &vodclusterv1.FetchRequest{TitleId: "sample-001", Length: -5}, DefaultChunkBytes)
	wantCode(t, err, codes.InvalidArgument, "length -5")
	_, err = fetch(ctx, c, &vodclusterv1.FetchRequest{TitleId: "sample-001", Offset: size + 1}, DefaultChunkBytes)
	wantCode(t, err, codes.OutOfRange, "past the end")
	_, err = fetch(ctx, c, &vodclusterv1.FetchRequest{TitleId: "sample-001", Offset: 1 << 62, Length: 1 << 62}, DefaultChunkBytes)
	wantCode(t, err, codes.OutOfRange, "past the end")
	_, err = fetch(ctx, c, &vodclusterv1.FetchRequest{TitleId: "sample-001", Offset: 188, IfVersion: "0123"}, DefaultChunkBytes)
	wantCode(t, err, codes.FailedPrecondition, `title "sample-001" is version `)
	if st := s.Stats(); st.Transfers != 0 || st.BytesSent != 0 || st.Active != 0 {
		t.Errorf("refused requests counted as transfers: %+v", st)
	}
}

// A fetch naming the title's version (if_version) is served as without:
// the bytes the caller holds are of the version the origin serves.
func TestFetchIfVersion(t *testing.T) {
	s, c := startServer(t, nil)
	ti, _ := s.Catalog().Title("sample-002")
	clip := readClip(t, "clip-b.ts")
	got, err := fetch(context.Background(), c, &vodclusterv1.FetchRequest{TitleId: "sample-002", Offset: 188 * 100, IfVersion: ti.Version}, DefaultChunkBytes)
	if err != nil || !bytes.Equal(got, clip[188*100:]) {
		t.Fatalf("fetch with the title's version: %d bytes, %v", len(got), err)
	}
}

// A title's file changed since the origin loaded its catalog (rewritten
// in place, or another file renamed over it) is no longer the version the
// catalog gives until the origin has read it again: a fetch naming that
// version is refused (UNAVAILABLE, retry; no transfer), one naming none is
// served the file as it is, as before versions. Once read again, the
// fetch naming the old version is refused FAILED_PRECONDITION.
func TestFetchIfVersionOfAChangedFile(t *testing.T) {
	clip := readClip(t, "clip-c.ts")
	for _, c := range []struct {
		name  string
		write func(path string, b []byte) error
	}{
		{"rewritten in place", func(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }},
		{"renamed over", func(path string, b []byte) error {
			if err := os.WriteFile(path+".new", b, 0o644); err != nil {
				return err
			}
			return os.Rename(path+".new", path)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, cl := startServer(t, nil)
			ti, _ := s.Catalog().Title("sample-003")
			changed := append([]byte(nil), clip...)
			changed[188*100+187] ^= 0xff
			if err := c.write(ti.Path, changed); err != nil {
				t.Fatal(err)
			}
			// another modification time than the scan's, as any later write has
			if err := os.Chtimes(ti.Path, time.Time{}, time.Now().Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			_, err := fetch(ctx, cl, &vodclusterv1.FetchRequest{TitleId: "sample-003", Offset: 188, IfVersion: ti.Version}, DefaultChunkBytes)
			wantCode(t, err, codes.Unavailable, `title "sample-003": its file changed since the origin loaded its catalog`)
			if st := s.Stats(); st.Transfers != 0 || st.BytesSent != 0 {
				t.Errorf("a refused fetch counted as a transfer: %+v", st)
			}
			got, err := fetch(ctx, cl, &vodclusterv1.FetchRequest{TitleId: "sample-003"}, DefaultChunkBytes)
			if err != nil || !bytes.Equal(got, changed) {
				t.Fatalf("fetch naming no version: %d bytes, %v", len(got), err)
			}
			if err := s.Reload(); err != nil {
				t.Fatal(err)
			}
			_, err = fetch(ctx, cl, &vodclusterv1.FetchRequest{TitleId: "sample-003", Offset: 188, IfVersion: ti.Version}, DefaultChunkBytes)
			wantCode(t, err, codes.FailedPrecondition, `title "sample-003" is version `)
		})
	}
}

func TestStartErrors(t *testing.T) {
	dir := sampleDir(t)
	bad := []*Server{
		{Listen: "127.0.0.1:0"},
		{Dir: dir, Listen: "127.0.0.1:0", SetupDelay: -time.Second},
		{Dir: dir, Listen: "127.0.0.1:0", MaxTransfers: -1},
		{Dir: dir, Listen: "127.0.0.1:0", TransferRateBps: -1},
		{Dir: dir, Listen: "127.0.0.1:0", ChunkBytes: 1000},
		{Dir: dir, Listen: "127.0.0.1:0", ChunkBytes: -188},
		{Dir: dir, Listen: "127.0.0.1:0", ChunkBytes: 188 * 10000},
		{Dir: t.TempDir() + "/missing", Listen: "127.0.0.1:0"},
		{Dir: dir, Listen: "256.0.0.1:0"},
	}
	for i, s := range bad {
		s.Logger = quiet
		if err := s.Start(); err == nil {
			s.Close()
			t.Errorf("case %d: Start succeeded", i)
		} else if s.Addr() != "" || s.Catalog() != nil {
			t.Errorf("case %d: half started after %v", i, err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("case %d: Close after a failed Start: %v", i, err)
		}
	}

	// The port is taken: nothing is left behind, and a retry elsewhere works.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	s := &Server{Dir: dir, Listen: lis.Addr().String(), Logger: quiet}
	if err := s.Start(); err == nil {
		t.Fatal("Start on a busy port succeeded")
	}
	s.Listen = "127.0.0.1:0"
	if err := s.Start(); err != nil {
		t.Fatalf("Start after a failed Start: %v", err)
	}
	if err := s.Start(); err == nil {
		t.Error("second Start succeeded")
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A negative setup delay is quoted as the configuration writes it
// ("-1m"), not in Go's form ("-1m0s").
func TestSetupDelayNegativeWritten(t *testing.T) {
	s := &Server{Dir: t.TempDir(), Listen: "127.0.0.1:0", SetupDelay: -time.Minute}
	if err := s.Validate(); err == nil || err.Error() != "cdp: SetupDelay -1m is negative" {
		t.Fatalf("SetupDelay -1m: %v", err)
	}
}
