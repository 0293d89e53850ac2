package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// A title replaced at the origin under the same id (another size) is
// filled in its new version once the node's cached catalog is older than
// catalogMaxAge; a fill that meets the new size before that fails, says
// why, and makes the next fill read the catalog again.
func TestReplacedTitleFillsAgain(t *testing.T) {
	a := sample(t)
	b, err := os.ReadFile("../../cdp/samples/clip-b.ts")
	if err != nil {
		t.Fatal(err)
	}
	if len(a) == len(b) {
		t.Fatal("the sample clips have the same size")
	}
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	o := &origin{titles: map[string][]byte{"t1": a, "t2": a}}
	s, err := Open(Config{Dir: t.TempDir(), Origin: startOrigin(t, o), Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	fill := func(id string) *View { t.Helper(); return fillOnce(t, s, id) }
	if v := fill("t1"); v.Err != nil {
		t.Fatal(v.Err)
	}
	if err := s.Evict("t1"); err != nil {
		t.Fatal(err)
	}
	o.add("t1", b)
	o.add("t2", b)

	// The cache is younger than catalogMaxAge: the fill expects the old
	// size, fails with the reason, and the next one reads the catalog.
	if v := fill("t2"); v.Err == nil || !strings.Contains(v.Err.Error(), "replaced at the origin") {
		t.Fatalf("fill of a title replaced since the catalog was read: %v", v.Err)
	}
	if v := fill("t2"); v.Err != nil || v.Index.Size != int64(len(b)) {
		t.Fatalf("the fill after: %v, %d bytes, want %d", v.Err, v.Index.Size, len(b))
	}
	if err := s.Evict("t2"); err != nil {
		t.Fatal(err)
	}

	// Later than catalogMaxAge: the fill reads the catalog first.
	clock.Add(int64(catalogMaxAge))
	o.add("t2", a)
	if v := fill("t2"); v.Err != nil || v.Index.Size != int64(len(a)) {
		t.Fatalf("fill after catalogMaxAge: %v, %d bytes, want %d", v.Err, v.Index.Size, len(a))
	}
	if m, err := s.Lookup(ctx, "t1"); err != nil || m.Size != int64(len(b)) {
		t.Fatalf("Lookup of the replaced title: %+v, %v", m, err)
	}
}

// A fill that cannot write to the node's own disk (full, read only) fails
// at once: retrying the origin cannot mend it. An origin error is retried.
func TestDiskErrorsNotRetried(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("%w: %v", ErrDisk, syscall.ENOSPC), false},
		{fmt.Errorf("%w: %v", ErrDisk, syscall.EROFS), false},
		{status.Error(codes.Unavailable, "origin restarting"), true},
		// the origin refuses the node's credential (another secret_file):
		// retried for fill_retry_for, its viewer waited 30 s for nothing
		{status.Error(codes.Unauthenticated, "missing or wrong bearer credential"), false},
	} {
		if got := retryable(c.err); got != c.want {
			t.Errorf("retryable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// A damaged copy in the title directory (not MPEG-TS, or truncated since
// its fill completed) is removed at Open, which goes on with the others:
// the directory is a cache, and a node that would not start over one bad
// file would crash-loop under its service manager.
func TestDamagedCopiesRemovedAtOpen(t *testing.T) {
	data := sample(t)
	o := &origin{titles: map[string][]byte{"good": data, "cut": data}}
	dir := t.TempDir()
	s, err := Open(Config{Dir: dir, Origin: startOrigin(t, o)})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"good", "cut"} {
		tt, err := s.Acquire(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		waitComplete(t, tt)
		s.Release(tt)
	}
	s.Close()
	if err := os.Truncate(filepath.Join(dir, "cut.ts"), int64(len(data)/2/188*188)); err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, 188*20)
	junk[0] = 0x47 // a sync byte, then garbage
	if err := os.WriteFile(filepath.Join(dir, "junk.ts"), junk, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty.ts"), nil, 0o644); err != nil { // no index: nothing to play by
		t.Fatal(err)
	}
	s, err = Open(Config{Dir: dir})
	if err != nil {
		t.Fatalf("Open over damaged copies: %v", err)
	}
	defer s.Close()
	var ids []string
	for _, st := range s.Titles() {
		ids = append(ids, st.ID)
	}
	if len(ids) != 1 || ids[0] != "good" {
		t.Fatalf("titles after Open: %v, want good only", ids)
	}
	for _, f := range []string{"cut.ts", "cut.idx", "junk.ts", "empty.ts"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s left in place: %v", f, err)
		}
	}
}

// A failed write to the title cache is a disk fault, reported until a test
// write, tried at most every diskFaultRetry, succeeds.
func TestDiskFaultClearsAfterTestWrite(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	parent := t.TempDir()
	dir := filepath.Join(parent, "titles")
	s, err := Open(Config{Dir: dir, Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.DiskFault() {
		t.Fatal("fault without a failed write")
	}
	s.noteDiskFault()
	if !s.DiskFault() {
		t.Fatal("no fault after a failed write")
	}
	// Still unwritable at the next try: the directory is gone.
	moved := filepath.Join(parent, "away")
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	clock.Add(int64(diskFaultRetry))
	if !s.DiskFault() {
		t.Fatal("fault cleared while the cache cannot be written")
	}
	if err := os.Rename(moved, dir); err != nil {
		t.Fatal(err)
	}
	clock.Add(int64(diskFaultRetry) / 2)
	if !s.DiskFault() {
		t.Fatal("tried again before diskFaultRetry")
	}
	clock.Add(int64(diskFaultRetry))
	if s.DiskFault() {
		t.Fatal("fault not cleared by a test write that succeeds")
	}
	if _, err := os.Stat(filepath.Join(dir, ".write-test")); !os.IsNotExist(err) {
		t.Fatalf("test file left behind: %v", err)
	}
}

// currentOrigin is an origin that answers GetTitle, as cdp.Server does.
type currentOrigin struct{ *origin }

func (o currentOrigin) GetTitle(_ context.Context, req *pb.GetTitleRequest) (*pb.Title, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if req.GetTitleId() == "t3" {
		return nil, status.Errorf(codes.FailedPrecondition, "title %q: its file changed since the origin loaded its catalog", req.GetTitleId())
	}
	d, ok := o.titles[req.GetTitleId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "title %q is not in the origin's catalog", req.GetTitleId())
	}
	return &pb.Title{Id: req.GetTitleId(), SizeBytes: int64(len(d)), BitrateBps: 600_000, DurationS: 20, Version: version(d)}, nil
}

// With an origin that answers GetTitle, a fill asks it for the title as
// it is now: a title replaced at the origin is filled in its new version
// at the first fill, however young the cached catalog, and one withdrawn
// there is unknown, both without reading the whole catalog again.
func TestFillAsksTheOriginForTheTitle(t *testing.T) {
	a := sample(t)
	b, err := os.ReadFile("../../cdp/samples/clip-b.ts")
	if err != nil {
		t.Fatal(err)
	}
	o := &origin{titles: map[string][]byte{"t1": a, "t2": a}}
	s, err := Open(Config{Dir: t.TempDir(), Origin: startOrigin(t, currentOrigin{o})})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Lookup(ctx, "t2"); err != nil { // the catalog cached
		t.Fatal(err)
	}
	fill := func(id string) *View { t.Helper(); return fillOnce(t, s, id) }
	o.add("t1", b)
	if v := fill("t1"); v.Err != nil || v.Index.Size != int64(len(b)) {
		t.Fatalf("fill of a title replaced since the catalog was read: %v, %d bytes, want %d", v.Err, v.Index.Size, len(b))
	}
	if st := s.Titles(); len(st) != 1 || st[0].Version != version(b) {
		t.Fatalf("titles %+v: want t1 of version %s", st, version(b))
	}
	o.mu.Lock()
	delete(o.titles, "t2")
	lists := o.lists
	o.mu.Unlock()
	if _, err := s.Acquire(ctx, "t2"); !errors.Is(err, ErrUnknownTitle) {
		t.Fatalf("a title withdrawn at the origin: %v, want ErrUnknownTitle", err)
	}
	// A title the origin refuses FAILED_PRECONDITION (as origins did
	// for a file changed under them; they now answer UNAVAILABLE until
	// they have read it again): no fill now, ErrOrigin (a viewer's 503),
	// no fetch.
	o.add("t3", a)
	o.mu.Lock()
	fetches := o.fetches
	o.mu.Unlock()
	if _, err := s.Acquire(ctx, "t3"); !errors.Is(err, ErrOrigin) || !strings.Contains(err.Error(), "its file changed") {
		t.Fatalf("a title being replaced at the origin: %v, want ErrOrigin", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.lists != lists {
		t.Errorf("the catalog was read %d more times", o.lists-lists)
	}
	if o.fetches != fetches {
		t.Errorf("%d fetches of a title being replaced", o.fetches-fetches)
	}
}

// fillOnce acquires title id of s (a fill when it is not on the node),
// waits for the fill to end and releases it; it returns the title's last
// view (View.Err: the fill's error).
func fillOnce(t *testing.T, s *Store, id string) *View {
	t.Helper()
	tt, err := s.Acquire(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	waitEnded(t, tt)
	s.Release(tt)
	return tt.View()
}

// A catalog refresh (lookup) and fills' fresh reads of a title (GetTitle)
// running at once do not touch the cached map unsynchronised: lookup read
// its answer from the map it had published, which fresh writes into under
// mu (a data race, "concurrent map read and map write" at worst). Under
// the race detector: the fresh reads go on after the last lookup, which
// takes mu no more, so a write after its unlocked read is reported.
func TestCatalogRefreshAndFreshReadAtOnce(t *testing.T) {
	o := currentOrigin{&origin{titles: map[string][]byte{"t1": sample(t)}}}
	c := &catalog{origin: startOrigin(t, o)}
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	done := make(chan error, 1)
	go func() {
		for range 50 {
			if _, err := c.fresh(ctx, "t1", start, catalogMaxAge); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := range 3 {
		// Each later than catalogMinRefresh: every lookup reads the list.
		now := start.Add(time.Duration(i+1) * 2 * catalogMinRefresh)
		if m, err := c.lookup(ctx, "t1", now, 0); err != nil || m.ID != "t1" {
			t.Fatalf("lookup %d: %+v, %v", i, m, err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
