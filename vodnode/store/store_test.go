package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

type origin struct {
	pb.UnimplementedOriginServer
	mu      sync.Mutex
	titles  map[string][]byte
	lists   int
	fetches int
}

func (o *origin) ListTitles(context.Context, *pb.ListTitlesRequest) (*pb.ListTitlesResponse, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lists++
	res := &pb.ListTitlesResponse{}
	for id, d := range o.titles {
		res.Titles = append(res.Titles, &pb.Title{Id: id, SizeBytes: int64(len(d)), BitrateBps: 600_000, DurationS: 20, Version: version(d)})
	}
	return res, nil
}

// version is a title's version as the CDP gives it (the first 128 bits of
// its SHA-256, hex).
func version(d []byte) string {
	sum := sha256.Sum256(d)
	return hex.EncodeToString(sum[:16])
}

// openAcquire opens a store of cfg and holds title id in it (a fill on
// demand when the store lacks it), both let go at the test's end: the
// title released, then the store closed.
func openAcquire(t testing.TB, cfg Config, id string) (*Store, *Title) {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tt, err := s.Acquire(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Release(tt) })
	return s, tt
}

// checkVersion answers a fetch whose if_version is not d's as the CDP does.
func checkVersion(req *pb.FetchRequest, d []byte) error {
	if v := req.GetIfVersion(); v != "" && v != version(d) {
		return status.Errorf(codes.FailedPrecondition, "title %q is version %s at the origin, not %s", req.GetTitleId(), version(d), v)
	}
	return nil
}

func (o *origin) Fetch(req *pb.FetchRequest, s grpc.ServerStreamingServer[pb.FetchChunk]) error {
	o.mu.Lock()
	d, ok := o.titles[req.GetTitleId()]
	o.fetches++
	o.mu.Unlock()
	if !ok {
		return status.Error(codes.NotFound, "no such title")
	}
	if err := checkVersion(req, d); err != nil {
		return err
	}
	for off := req.GetOffset(); off < int64(len(d)); off += 64 << 10 {
		if err := s.Send(&pb.FetchChunk{Offset: off, Data: d[off:min(off+64<<10, int64(len(d)))]}); err != nil {
			return err
		}
	}
	return nil
}

func (o *origin) add(id string, d []byte) {
	o.mu.Lock()
	o.titles[id] = d
	o.mu.Unlock()
}

func sample(t testing.TB) []byte {
	b, err := os.ReadFile("../../cdp/samples/clip-a.ts")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func startOrigin(t testing.TB, o pb.OriginServer) pb.OriginClient {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	pb.RegisterOriginServer(s, o)
	go s.Serve(l)
	t.Cleanup(s.Stop)
	cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return pb.NewOriginClient(cc)
}

func waitComplete(t testing.TB, tt *Title) {
	t.Helper()
	if err := waitEnded(t, tt); err != nil {
		t.Fatal(err)
	}
}

// waitEnded waits for tt's fill to complete or fail and returns its error.
func waitEnded(t testing.TB, tt *Title) error {
	t.Helper()
	done := make(chan struct{})
	var wait func()
	wait = func() {
		if v := tt.View(); v.Complete || v.Err != nil {
			close(done)
			return
		}
		if !tt.Notify(tt.View().Index.Size, wait) {
			wait()
		}
	}
	wait()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("fill did not complete")
	}
	return tt.View().Err
}

func TestFillPersistAndReopen(t *testing.T) {
	data := sample(t)
	o := &origin{titles: map[string][]byte{"t1": data}}
	dir := t.TempDir()
	s, err := Open(Config{Dir: dir, Origin: startOrigin(t, o)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Acquire(ctx, "../x"); !errors.Is(err, ErrBadID) {
		t.Errorf("bad id: %v", err)
	}
	if _, err := s.Acquire(ctx, "nope"); !errors.Is(err, ErrUnknownTitle) {
		t.Errorf("unknown: %v", err)
	}
	// a title added to the catalog later is found (refresh on a miss, at most once a second)
	o.add("t2", data)
	time.Sleep(catalogMinRefresh)
	if _, err := s.Lookup(ctx, "t2"); err != nil {
		t.Errorf("t2 after a catalog change: %v", err)
	}
	tt, err := s.Acquire(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	waitComplete(t, tt)
	if n := s.FillsCompleted()["t1"]; n != 1 {
		t.Errorf("fills of t1 completed: %d, want 1", n)
	}
	if st := s.Titles(); len(st) != 1 || st[0].Version != version(data) {
		t.Errorf("titles %+v: want t1 of version %s", st, version(data))
	}
	if err := s.Evict("t1"); !errors.Is(err, ErrInUse) {
		t.Errorf("evict in use: %v", err)
	}
	s.Release(tt)
	s.Close()
	for _, f := range []string{"t1.ts", "t1.idx"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	// a leftover .part of an interrupted fill is removed at Open; the
	// persisted index is used
	os.WriteFile(filepath.Join(dir, "t3.ts.part"), []byte("junk"), 0o644)
	s2, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := os.Stat(filepath.Join(dir, "t3.ts.part")); !os.IsNotExist(err) {
		t.Error(".part not removed")
	}
	st := s2.Titles()
	if len(st) != 1 || st[0].ID != "t1" || st[0].Stored != int64(len(data)) || st[0].Filling || st[0].Version != version(data) {
		t.Fatalf("titles after reopen %+v (the copy's version kept with its index: want %s)", st, version(data))
	}
	m, err := s2.Lookup(ctx, "t1")
	if err != nil || m.Duration < 19 || m.Bitrate < 500_000 {
		t.Errorf("meta %+v %v", m, err)
	}
	if err := s2.Evict("t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "t1.ts")); !os.IsNotExist(err) {
		t.Error("evicted file remains")
	}
	if used, _, _ := s2.Usage(); used != 0 {
		t.Errorf("used %d after eviction", used)
	}
}

func TestNotTSFails(t *testing.T) {
	o := &origin{titles: map[string][]byte{"junk": make([]byte, 188*10)}}
	s, err := Open(Config{Dir: t.TempDir(), Origin: startOrigin(t, o)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tt, err := s.Acquire(context.Background(), "junk")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	if tt.Notify(1<<40, func() { close(done) }) {
		<-done
	}
	if tt.View().Err == nil {
		t.Fatal("a fill of non-TS bytes succeeded")
	}
	s.Release(tt)
	if len(s.Titles()) != 0 {
		t.Errorf("failed title kept: %+v", s.Titles())
	}
	if n := s.FillsCompleted()["junk"]; n != 0 {
		t.Errorf("a failed fill counted as completed (%d)", n)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fetches != 1 {
		t.Errorf("%d fetches for a non-retryable error", o.fetches)
	}
}
