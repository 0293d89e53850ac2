package store

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// flipped returns d with one payload byte of its 101st packet changed:
// still valid MPEG-TS, of the same size, another version.
func flipped(d []byte) []byte {
	c := append([]byte(nil), d...)
	c[188*100+187] ^= 0xff
	return c
}

// lyingOrigin announces its titles' versions (origin.ListTitles) but,
// while lie is set, sends them with one byte flipped; with noVersion it
// announces no version at all.
type lyingOrigin struct {
	*origin
	lie       atomic.Bool
	noVersion bool
}

func (o *lyingOrigin) ListTitles(ctx context.Context, req *pb.ListTitlesRequest) (*pb.ListTitlesResponse, error) {
	res, err := o.origin.ListTitles(ctx, req)
	if o.noVersion && res != nil {
		for _, t := range res.Titles {
			t.Version = ""
		}
	}
	return res, err
}

func (o *lyingOrigin) Fetch(req *pb.FetchRequest, s grpc.ServerStreamingServer[pb.FetchChunk]) error {
	if !o.lie.Load() {
		return o.origin.Fetch(req, s)
	}
	o.mu.Lock()
	d := o.titles[req.GetTitleId()]
	o.fetches++
	o.mu.Unlock()
	if err := checkVersion(req, d); err != nil {
		return err
	}
	bad := flipped(d)
	for off := req.GetOffset(); off < int64(len(bad)); off += 64 << 10 {
		if err := s.Send(&pb.FetchChunk{Offset: off, Data: bad[off:min(off+64<<10, int64(len(bad)))]}); err != nil {
			return err
		}
	}
	return nil
}

// noCopyLeft checks that s keeps nothing of id: no title, no partial, no
// file.
func noCopyLeft(t *testing.T, s *Store, id string) {
	t.Helper()
	if st := s.Titles(); len(st) != 0 {
		t.Errorf("titles after a fill of other bytes than the version: %+v", st)
	}
	if ps := s.Partials(); len(ps) != 0 {
		t.Errorf("partials after a fill of other bytes than the version: %+v", ps)
	}
	for _, ext := range []string{".ts", ".idx", ".ts.part", partialMetaExt} {
		if _, err := os.Stat(s.path(id, ext)); !os.IsNotExist(err) {
			t.Errorf("%s%s after a fill of other bytes than the version: %v", id, ext, err)
		}
	}
	if used, _, _ := s.Usage(); used != 0 {
		t.Errorf("used %d bytes, want 0", used)
	}
}

// An origin that sends other bytes (as many) than the version it announced:
// the fill fails, its viewers get the error, nothing of it is kept (no
// copy, no partial), and the next fill reads the catalog again; once the
// origin sends the right bytes, that fill completes.
func TestFillOfOtherBytesThanTheVersionFails(t *testing.T) {
	data := sample(t)
	o := &lyingOrigin{origin: &origin{titles: map[string][]byte{"t1": data}}}
	o.lie.Store(true)
	s, err := Open(Config{Dir: t.TempDir(), Origin: startOrigin(t, o)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = fillEnded(t, s, "t1")
	if !errors.Is(err, errMismatch) || !strings.Contains(err.Error(), "bytes do not match the origin's version "+version(data)) ||
		!strings.Contains(err.Error(), version(flipped(data))) {
		t.Fatalf("fill of other bytes than the version announced: %v", err)
	}
	noCopyLeft(t, s, "t1")
	if f := s.FillsFailed(); f["mismatch"] != 1 || len(f) != 1 {
		t.Errorf("fills failed by cause %v, want one mismatch", f)
	}
	if n := s.FillsCompleted()["t1"]; n != 0 {
		t.Errorf("%d fills of t1 completed, want 0", n)
	}
	if f := s.TakeFailures(); len(f) != 1 || f[0].Title != "t1" || !strings.Contains(f[0].Reason, "do not match") {
		t.Errorf("failures %+v, want the fill of t1 reported", f)
	}

	o.lie.Store(false)
	o.mu.Lock()
	lists := o.lists
	o.mu.Unlock()
	tt, err := s.Acquire(context.Background(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(tt)
	waitComplete(t, tt)
	o.mu.Lock()
	if o.lists != lists+1 {
		t.Errorf("the catalog was read %d times for the next fill, want once (it was forgotten)", o.lists-lists)
	}
	o.mu.Unlock()
	checkWhole(t, s, tt, data)
	if st := s.Titles(); len(st) != 1 || st[0].Version != version(data) {
		t.Errorf("titles %+v, want t1 of version %s", st, version(data))
	}
}

// An origin that gives no version: nothing is checked, and what it sends
// is kept (of no known version).
func TestFillWithoutVersionNotChecked(t *testing.T) {
	data := sample(t)
	o := &lyingOrigin{origin: &origin{titles: map[string][]byte{"t1": data}}, noVersion: true}
	o.lie.Store(true)
	s, err := Open(Config{Dir: t.TempDir(), Origin: startOrigin(t, o)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := fillEnded(t, s, "t1"); err != nil {
		t.Fatalf("fill from an origin that gives no version: %v", err)
	}
	if st := s.Titles(); len(st) != 1 || st[0].Version != "" || st[0].Stored != int64(len(data)) {
		t.Errorf("titles %+v, want t1 whole, of no version", st)
	}
}

// A partial whose kept bytes changed on the node's disk (still valid
// MPEG-TS) is resumed, but the copy it makes does not hash to the version:
// the fill fails, the partial goes, and the next fill fetches the title
// from its first byte.
func TestResumedPartialChangedOnDiskFails(t *testing.T) {
	data := sample(t)
	size := int64(len(data))
	o := newCDPOrigin(t, map[string][]byte{"t1": data})
	o.start(8_000_000)
	clk := newTestClock()
	s := openCutStore(t, o, clk, 300*time.Millisecond)
	p := cutFill(t, s, o, "t1", 300<<10)
	s.TakeFailures()
	f, err := os.OpenFile(s.path("t1", ".ts.part"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{data[188*100+187] ^ 0xff}, 188*100+187); err != nil {
		t.Fatal(err)
	}
	f.Close()

	o.start(0)
	o.ready()
	clk.add(2 * catalogMinRefresh)
	err = fillEnded(t, s, "t1")
	if !errors.Is(err, errMismatch) {
		t.Fatalf("resume from a partial changed on disk: %v", err)
	}
	if got := o.sent(); got != size-p.Stored {
		t.Errorf("the origin sent %d bytes for the resume, want the missing %d (the changed partial kept whole)", got, size-p.Stored)
	}
	noCopyLeft(t, s, "t1")

	before := o.sent()
	clk.add(2 * catalogMinRefresh)
	tt, err := s.Acquire(context.Background(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(tt)
	waitComplete(t, tt)
	if got := o.sent() - before; got != size {
		t.Errorf("the origin sent %d bytes for the next fill, want the whole %d", got, size)
	}
	checkWhole(t, s, tt, data)
}

// BenchmarkFill measures a fill's throughput (bytes/s of title stored,
// from an origin over loopback gRPC into a store on disk, index saved,
// synced) with the version checked (SHA-256 of every byte) and without
// (an origin that gives no version).
func BenchmarkFill(b *testing.B) {
	data := sample(b)
	for _, c := range []struct {
		name      string
		noVersion bool
	}{{"version", false}, {"no_version", true}} {
		b.Run(c.name, func(b *testing.B) {
			o := &lyingOrigin{origin: &origin{titles: map[string][]byte{"t1": data}}, noVersion: c.noVersion}
			s, err := Open(Config{Dir: b.TempDir(), Origin: startOrigin(b, o), Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for b.Loop() {
				tt, err := s.Acquire(ctx, "t1")
				if err != nil {
					b.Fatal(err)
				}
				waitComplete(b, tt)
				s.Release(tt)
				if err := s.Evict("t1"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFillWriter measures what a fill does with each 64 KiB chunk of
// the origin's besides writing it: indexing, with and without hashing.
func BenchmarkFillWriter(b *testing.B) {
	data := sample(b)
	for _, c := range []struct {
		name    string
		version string
	}{{"sha256", version(data)}, {"none", ""}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				w := newFillWriter(Meta{Version: c.version})
				for off := 0; off < len(data); off += 64 << 10 {
					if _, err := w.Write(data[off:min(off+64<<10, len(data))]); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.verify(Meta{Version: c.version}, int64(len(data))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
