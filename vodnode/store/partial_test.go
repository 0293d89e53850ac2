package store

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"

	"vodcluster/cdp"
	"vodcluster/cdp/tsindex"
	pb "vodcluster/proto/vodcluster/v1"
)

// cdpOrigin is a real origin (cdp.Server) serving the titles of dir on a
// fixed loopback address, that can be stopped (its connections cut) and
// started again, with other titles or another transfer rate.
type cdpOrigin struct {
	t    *testing.T
	dir  string
	addr string
	srv  *cdp.Server
	cc   *grpc.ClientConn // client's
	// poll is the origin's CatalogPoll from its next start (0: the
	// default, negative: never; it reads its directory again only when
	// started again).
	poll time.Duration
}

// newCDPOrigin writes titles as <id>.ts into a new directory and picks an
// address below the ephemeral port range (no outgoing connection takes it
// while the origin is stopped).
func newCDPOrigin(t *testing.T, titles map[string][]byte) *cdpOrigin {
	t.Helper()
	o := &cdpOrigin{t: t, dir: t.TempDir()}
	o.put(titles)
	for range 200 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(20000+rand.IntN(12000)))
		if l, err := net.Listen("tcp", addr); err == nil {
			l.Close()
			o.addr = addr
			break
		}
	}
	if o.addr == "" {
		t.Fatal("no free port below the ephemeral range")
	}
	t.Cleanup(o.stop)
	return o
}

// put writes titles into the origin's directory (read at the next start).
func (o *cdpOrigin) put(titles map[string][]byte) {
	o.t.Helper()
	for id, d := range titles {
		if err := os.WriteFile(filepath.Join(o.dir, id+".ts"), d, 0o644); err != nil {
			o.t.Fatal(err)
		}
	}
}

// start serves the directory's titles paced to rateBps (0: unlimited).
func (o *cdpOrigin) start(rateBps int64) {
	o.t.Helper()
	o.srv = &cdp.Server{Dir: o.dir, Listen: o.addr, Logger: slog.New(slog.DiscardHandler), TransferRateBps: rateBps, CatalogPoll: o.poll}
	if err := o.srv.Start(); err != nil {
		o.t.Fatal(err)
	}
}

// stop closes the origin, cutting its transfers.
func (o *cdpOrigin) stop() {
	if o.srv != nil {
		o.srv.Close()
	}
}

// sent returns the title bytes the running origin has sent since it started.
func (o *cdpOrigin) sent() int64 { return o.srv.Stats().BytesSent }

// client dials the origin as a node does (reconnecting at most 2 s apart).
func (o *cdpOrigin) client() pb.OriginClient {
	o.t.Helper()
	cc, err := grpc.NewClient(o.addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithConnectParams(pb.ConnectParams))
	if err != nil {
		o.t.Fatal(err)
	}
	o.t.Cleanup(func() { cc.Close() })
	o.cc = cc
	return pb.NewOriginClient(cc)
}

// ready waits until the client is connected to the origin (after a
// restart, its reconnection backs off up to 2 s).
func (o *cdpOrigin) ready() {
	o.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o.cc.Connect()
	for st := o.cc.GetState(); st != connectivity.Ready; st = o.cc.GetState() {
		if !o.cc.WaitForStateChange(ctx, st) {
			o.t.Fatalf("no connection to the restarted origin (%v)", st)
		}
	}
}

// testClock is a Config.Now the test moves on.
type testClock struct{ ns atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *testClock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *testClock) add(d time.Duration) { c.ns.Add(int64(d)) }
func (c *testClock) set(t time.Time)     { c.ns.Store(t.UnixNano()) }

// cutFill starts a fill of id, waits for at least min bytes on disk, then
// stops the origin for good: the fill fails after RetryFor and keeps its
// bytes as a partial, which it returns.
func cutFill(t *testing.T, s *Store, o *cdpOrigin, id string, min int64) Partial {
	t.Helper()
	tt, err := s.Acquire(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(tt)
	waitView(t, tt, 10*time.Second, "the first bytes", func(v *View) bool { return v.Index.Size >= min })
	o.stop()
	if err := waitEnded(t, tt); err == nil || !strings.Contains(err.Error(), "no byte from the origin") {
		t.Fatalf("fill from an origin gone for good: %v", err)
	}
	s.fills.Wait()
	ps := s.Partials()
	if len(ps) != 1 || ps[0].ID != id || ps[0].Stored < min || ps[0].Stored%tsindex.PacketSize != 0 {
		t.Fatalf("partials after the cut fill: %+v, want %s with %d bytes or more, whole packets", ps, id, min)
	}
	return ps[0]
}

// openCutStore opens a store on a new directory filling from o, with the
// test clock clk (nil: the wall clock) and the short retry backoff the
// partial tests cut fills with (a fill whose origin is gone fails after
// retryFor); closed when the test ends.
func openCutStore(t *testing.T, o *cdpOrigin, clk *testClock, retryFor time.Duration) *Store {
	t.Helper()
	cfg := quickRetry(Config{Dir: t.TempDir(), Origin: o.client()}, retryFor)
	if clk != nil {
		cfg.Now = clk.now
	}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// quickRetry returns cfg with the short retry backoff of the partial
// tests: a fill whose origin is gone fails after retryFor.
func quickRetry(cfg Config, retryFor time.Duration) Config {
	cfg.Retry, cfg.RetryMax, cfg.RetryFor = 20*time.Millisecond, 100*time.Millisecond, retryFor
	return cfg
}

// fillEnded fills id in s to its end, whole or failed, and returns how it
// ended (nil: complete) once s has no fill left.
func fillEnded(t *testing.T, s *Store, id string) error {
	t.Helper()
	tt, err := s.Acquire(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(tt)
	err = waitEnded(t, tt)
	s.fills.Wait()
	return err
}

// stopMidFill fills t1 (data) from a new origin at 1 MB/s into a store on
// a new directory, and closes the store, as a node stops, once at least
// min bytes are on disk. It returns the origin, the store's Config (to
// Open it again) and the size of the .part file the stop left.
func stopMidFill(t *testing.T, data []byte, min int64) (*cdpOrigin, Config, int64) {
	t.Helper()
	o := newCDPOrigin(t, map[string][]byte{"t1": data})
	o.start(8_000_000)
	cfg := Config{Dir: t.TempDir(), Origin: o.client()}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tt, err := s.Acquire(context.Background(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	waitView(t, tt, 10*time.Second, "the first bytes", func(v *View) bool { return v.Index.Size >= min })
	s.Release(tt)
	s.Close() // mid-fill
	st, err := os.Stat(filepath.Join(cfg.Dir, "t1.ts.part"))
	if err != nil || st.Size() < min || st.Size() >= int64(len(data)) || st.Size()%tsindex.PacketSize != 0 {
		t.Fatalf("partial after the node stopped: %v, %v", st, err)
	}
	return o, cfg, st.Size()
}

// checkWhole checks that id is stored complete, byte for byte want, with
// the index a fill in one go builds.
func checkWhole(t *testing.T, s *Store, tt *Title, want []byte) {
	t.Helper()
	got, err := os.ReadFile(s.path(tt.ID(), ".ts"))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("stored title differs from the origin's (%d of %d bytes, %v)", len(got), len(want), err)
	}
	fresh, err := tsindex.BuildFrom(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	if v := tt.View(); !v.Complete || !reflect.DeepEqual(v.Index, *fresh) {
		t.Errorf("index of the resumed fill (%d PCRs, %d keyframes) differs from one built in one go (%d, %d)",
			len(v.Index.PCRs), len(v.Index.Keyframes), len(fresh.PCRs), len(fresh.Keyframes))
	}
	x, ok := readIndex(s.path(tt.ID(), ".idx"))
	if !ok || !reflect.DeepEqual(x.Index, *fresh) {
		t.Errorf("persisted index differs from one built in one go")
	}
	for _, ext := range []string{".ts.part", partialMetaExt} {
		if _, err := os.Stat(s.path(tt.ID(), ext)); !os.IsNotExist(err) {
			t.Errorf("%s left after the fill completed: %v", ext, err)
		}
	}
	if ps := s.Partials(); len(ps) != 0 {
		t.Errorf("partials after the fill completed: %+v", ps)
	}
}

// A fill cut by an origin gone for longer than RetryFor keeps its bytes;
// the next fill, once the origin is back, asks it for the missing bytes
// only, and the title ends up byte for byte the origin's with the index of
// a fill in one go. Meanwhile the partial is not a title of the node.
func TestPartialResumedAfterOriginOutage(t *testing.T) {
	data := sample(t)
	size := int64(len(data))
	o := newCDPOrigin(t, map[string][]byte{"t1": data})
	o.start(8_000_000) // 1 MB/s: the 1.5 MB title takes 1.5 s
	clk := newTestClock()
	s := openCutStore(t, o, clk, 300*time.Millisecond)
	p := cutFill(t, s, o, "t1", 300<<10)
	if p.Stored >= size || p.Size != size || p.Version != version(data) {
		t.Fatalf("partial %+v, want part of %d bytes of version %s", p, size, version(data))
	}
	if st := s.Titles(); len(st) != 0 {
		t.Errorf("titles with only a partial: %+v", st)
	}
	if used, partial, _ := s.Usage(); used != p.Stored || partial != p.Stored {
		t.Errorf("used %d bytes, %d of partials, want the partial's %d", used, partial, p.Stored)
	}
	if got := s.OriginBytes(); got != p.Stored {
		t.Errorf("%d bytes received, %d kept", got, p.Stored)
	}
	if f := s.TakeFailures(); len(f) != 1 || f[0].Title != "t1" {
		t.Errorf("failures %+v, want the cut fill reported", f)
	}

	o.start(0)
	o.ready()
	clk.add(2 * catalogMinRefresh) // the resume reads the catalog again: same version
	tt, err := s.Acquire(context.Background(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(tt)
	waitComplete(t, tt)
	if got := o.sent(); got != size-p.Stored {
		t.Errorf("the origin sent %d bytes for the resumed fill, want the missing %d", got, size-p.Stored)
	}
	if got := s.OriginBytes(); got != size {
		t.Errorf("%d bytes received from the origin for a title of %d", got, size)
	}
	checkWhole(t, s, tt, data)
	if used, partial, _ := s.Usage(); used != size || partial != 0 {
		t.Errorf("used %d bytes, %d of partials, want the title's %d, none", used, partial, size)
	}
}

// A node stopped mid-fill keeps the bytes; started again it resumes the
// title from them (here on the manager's prefetch). A tail a crash left
// never written (zeros) is cut at its first packet: only the bytes after
// the last valid packet, and that packet (whose tail may be lost too:
// TestPartialAfterAPowerLossResumedWhole), are fetched again.
func TestPartialResumedAfterNodeRestart(t *testing.T) {
	data := sample(t)
	size := int64(len(data))
	o, cfg, kept := stopMidFill(t, data, 300<<10)
	// what a crash may leave: blocks allocated, never written
	f, err := os.OpenFile(filepath.Join(cfg.Dir, "t1.ts.part"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(make([]byte, 8192+100))
	f.Close()

	s2, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if ps := s2.Partials(); len(ps) != 1 || ps[0].ID != "t1" || ps[0].Stored != kept+8192+100 || ps[0].Size != size {
		t.Fatalf("partials after the restart: %+v", ps)
	}
	if len(s2.Titles()) != 0 {
		t.Fatalf("titles after the restart: %+v", s2.Titles())
	}
	before := o.sent()
	if err := s2.Prefetch(context.Background(), "t1"); err != nil {
		t.Fatal(err)
	}
	tt, err := s2.Acquire(context.Background(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Release(tt)
	waitComplete(t, tt)
	if got, want := o.sent()-before, size-kept+tsindex.PacketSize; got != want {
		t.Errorf("the origin sent %d bytes for the resumed fill, want the missing %d and the last valid packet", got, want)
	}
	checkWhole(t, s2, tt, data)
}

// A partial whose title has another size or other bytes at the origin now
// is removed, never resumed: found by asking the origin for the title
// before the fill (Origin.GetTitle), also when the catalog cached is not
// a second old, and the new version is filled from its first byte. (With
// an origin that predates GetTitle, the fetch of another version is
// refused and the next fill reads the catalog: TestReplacedTitleFillsAgain.)
func TestPartialOfAnotherVersionDiscarded(t *testing.T) {
	data := sample(t)
	other, err := os.ReadFile("../../cdp/samples/clip-b.ts")
	if err != nil {
		t.Fatal(err)
	}
	sameSize := append([]byte(nil), data...)
	sameSize[188*100+187] ^= 0xff // a payload byte in the kept part
	for _, c := range []struct {
		name    string
		next    []byte
		refresh bool // the catalog is older than catalogMinRefresh at the resume
	}{
		{"other size", other, true},
		{"other bytes", sameSize, true},
		{"other bytes, catalog cached", sameSize, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := newCDPOrigin(t, map[string][]byte{"t1": data})
			o.start(8_000_000)
			clk := newTestClock()
			s := openCutStore(t, o, clk, 300*time.Millisecond)
			cutFill(t, s, o, "t1", 300<<10)
			o.put(map[string][]byte{"t1": c.next})
			o.start(0)
			o.ready()
			if c.refresh {
				clk.add(2 * catalogMinRefresh)
			}
			ctx := context.Background()
			tt, err := s.Acquire(ctx, "t1")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Release(tt)
			waitComplete(t, tt)
			if got := o.sent(); got != int64(len(c.next)) {
				t.Errorf("the origin sent %d bytes, want the whole new version's %d", got, len(c.next))
			}
			checkWhole(t, s, tt, c.next)
		})
	}
}

// A partial is never served as the title: not listed, and a fill that
// resumes it shows its bytes as incomplete; when that fill fails too, its
// readers get the error and the bytes stay a partial. Evict removes it.
func TestPartialNeverServedAsComplete(t *testing.T) {
	data := sample(t)
	o := newCDPOrigin(t, map[string][]byte{"t1": data})
	o.start(8_000_000)
	s := openCutStore(t, o, nil, 300*time.Millisecond)
	p := cutFill(t, s, o, "t1", 300<<10)
	s.TakeFailures()

	// the origin still down: the catalog cached is used
	tt, err := s.Acquire(context.Background(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	v := waitView(t, tt, 10*time.Second, "the partial's bytes", func(v *View) bool { return v.Index.Size == p.Stored })
	if v.Complete || len(v.Index.PCRs) < 2 {
		t.Fatalf("view of a resumed partial: complete %v, %d PCRs", v.Complete, len(v.Index.PCRs))
	}
	got := make([]byte, p.Stored)
	if _, err := tt.ReadAt(got, 0); err != nil || !bytes.Equal(got, data[:p.Stored]) {
		t.Fatalf("reading the partial's bytes: %v", err)
	}
	if err := waitEnded(t, tt); err == nil {
		t.Fatal("a fill from an origin that is down completed")
	}
	if v := tt.View(); v.Complete {
		t.Error("a failed fill's view is complete")
	}
	s.Release(tt)
	s.fills.Wait()
	if ps := s.Partials(); len(ps) != 1 || ps[0].Stored != p.Stored {
		t.Fatalf("partials after the second failure: %+v, want the same %d bytes", ps, p.Stored)
	}
	if len(s.Titles()) != 0 {
		t.Errorf("titles: %+v", s.Titles())
	}
	if err := s.Evict("t1"); err != nil {
		t.Fatalf("evicting a partial: %v", err)
	}
	if err := s.Evict("t1"); !errors.Is(err, ErrUnknownTitle) {
		t.Errorf("evicting it again: %v", err)
	}
	for _, ext := range []string{".ts.part", partialMetaExt} {
		if _, err := os.Stat(s.path("t1", ext)); !os.IsNotExist(err) {
			t.Errorf("%s after the partial's eviction: %v", ext, err)
		}
	}
	if used, _, _ := s.Usage(); used != 0 {
		t.Errorf("used %d bytes after the partial's eviction", used)
	}
}

// Partials count in the quota but are room: a fill that needs it removes
// them (oldest first) before the Evictor evicts a whole title. One not
// resumed within PartialMaxAge is removed, by the sweep or at Open; a
// .part without its record, or a record without its .part, at Open.
func TestPartialsMakeRoomFirstAndExpire(t *testing.T) {
	data := sample(t)
	size := int64(len(data))
	const cut = 188 * 2000
	o := newFlakyOrigin(map[string][]byte{"keep": data, "p1": data, "p2": data, "new": data}, cut)
	clk := newTestClock()
	dir := t.TempDir()
	cfg := quickRetry(Config{Dir: dir, Origin: startOrigin(t, o), Now: clk.now, DiskBytes: 2*size + cut}, 200*time.Millisecond)
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := fillEnded(t, s, "keep"); err != nil {
		t.Fatal(err)
	}
	o.down.Store(true)
	if fillEnded(t, s, "p1") == nil {
		t.Fatal("fill of p1 from a down origin completed")
	}
	clk.add(time.Minute)
	if fillEnded(t, s, "p2") == nil {
		t.Fatal("fill of p2 from a down origin completed")
	}
	if ps := s.Partials(); len(ps) != 2 || ps[0].Stored != cut || ps[1].Stored != cut {
		t.Fatalf("partials %+v, want p1 and p2 of %d bytes", ps, cut)
	}
	if used, _, _ := s.Usage(); used != size+2*cut {
		t.Fatalf("used %d, want %d", used, size+2*cut)
	}

	// "new" needs the room of one partial: the oldest, p1, goes.
	o.down.Store(false)
	if err := fillEnded(t, s, "new"); err != nil {
		t.Fatal(err)
	}
	if ps := s.Partials(); len(ps) != 1 || ps[0].ID != "p2" {
		t.Errorf("partials after a fill that needed room: %+v, want p2 only", ps)
	}
	if st := s.Titles(); len(st) != 2 || st[0].ID != "keep" || st[1].ID != "new" {
		t.Errorf("titles %+v, want keep (not evicted) and new", st)
	}
	if _, err := os.Stat(filepath.Join(dir, "p1.ts.part")); !os.IsNotExist(err) {
		t.Errorf("p1.ts.part after its removal: %v", err)
	}

	// p2 expires: by the sweep
	clk.add(DefaultPartialMaxAge)
	s.expirePartials()
	if ps := s.Partials(); len(ps) != 0 {
		t.Errorf("partials after PartialMaxAge: %+v", ps)
	}
	if used, _, _ := s.Usage(); used != 2*size {
		t.Errorf("used %d, want %d", used, 2*size)
	}

	// and at Open, by the .part's modification time
	o.down.Store(true)
	if fillEnded(t, s, "p1") == nil {
		t.Fatal("fill of p1 from a down origin completed")
	}
	s.Close()
	os.WriteFile(filepath.Join(dir, "orphan.ts.part"), data[:cut], 0o644)
	os.WriteFile(filepath.Join(dir, "lone"+partialMetaExt), []byte(`{"title_id":"lone"}`), 0o644)
	clk.set(time.Now().Add(DefaultPartialMaxAge + time.Hour))
	s, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ps := s.Partials(); len(ps) != 0 {
		t.Errorf("partials at Open after PartialMaxAge: %+v", ps)
	}
	for _, f := range []string{"p1.ts.part", "p1" + partialMetaExt, "orphan.ts.part", "lone" + partialMetaExt} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s after Open: %v", f, err)
		}
	}
}
