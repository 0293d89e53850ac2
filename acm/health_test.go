package acm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"vodcluster/acm/boss"
	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// downStore fails every read or write of a state and every session write or
// delete while down is set.
type downStore struct {
	store.Store
	down  atomic.Bool
	reads atomic.Int64
}

func (d *downStore) State(ctx context.Context, name string) ([]byte, error) {
	d.reads.Add(1)
	if d.down.Load() {
		return nil, errors.New("connection refused")
	}
	return d.Store.State(ctx, name)
}

// PutState fails too: the health check writes a state (stateWriteProbe)
// after a write failed, and a store that took it would be back.
func (d *downStore) PutState(ctx context.Context, name string, v []byte) error {
	if d.down.Load() {
		return errors.New("connection refused")
	}
	return d.Store.PutState(ctx, name, v)
}

func (d *downStore) PutSession(ctx context.Context, s store.Session) error {
	if d.down.Load() {
		return errors.New("connection refused")
	}
	return d.Store.PutSession(ctx, s)
}

func (d *downStore) DeleteSession(ctx context.Context, id string) error {
	if d.down.Load() {
		return errors.New("connection refused")
	}
	return d.Store.DeleteSession(ctx, id)
}

// managerOnDownStore starts a manager on a badger store that can be made
// to fail (ds.down), checking its health every 20 ms.
func managerOnDownStore(t *testing.T) (*env, *downStore, *store.Badger) {
	t.Helper()
	b, err := store.OpenBadger(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ds := &downStore{Store: b}
	return newManager(t, "", func(m *Manager) { m.Store, m.HealthCheck = ds, 20*time.Millisecond }), ds, b
}

// probe returns the status and body of GET path on m's front door.
func probe(t *testing.T, m *Manager, path string) (int, string) {
	t.Helper()
	res, err := noRedirect.Get("http://" + m.HTTPAddr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// awaitProbe polls path every 10 ms, for at most 10 s, until it answers
// code with a body containing body.
func awaitProbe(t *testing.T, m *Manager, path string, code int, body string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var got int
	var text string
	for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
		if got, text = probe(t, m, path); got == code && strings.Contains(text, body) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: %d %q, want %d %q", path, got, text, code, body)
}

// freeAddr returns a loopback address nothing listens on, for an origin
// the test starts later: unusedPortBelowEphemeral. A port from the
// ephemeral range (it was 127.0.0.6:0) could be taken before the origin
// came up, by the manager's own dial to it connecting to itself or by any
// other socket on the machine: TestNoCatalogYetIsUnavailable failed in CI
// with "listen tcp 127.0.0.6:44725: bind: address already in use".
func freeAddr(t *testing.T) string { return unusedPortBelowEphemeral(t) }

// startBare starts a manager on loopback with the test users, configured
// by configure, closed at the end of the test.
func startBare(t *testing.T, configure func(*Manager)) *Manager {
	t.Helper()
	file, err := boss.NewFile(DefaultRealm, testUsers())
	if err != nil {
		t.Fatal(err)
	}
	m := &Manager{RTSPListen: "127.0.0.6:0", HTTPListen: "127.0.0.6:0", GRPCListen: "127.0.0.6:0",
		DataDir: t.TempDir(), Secret: testSecret, BOSS: file, Logger: testLogger(t)}
	configure(m)
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// /healthz is 200 with a catalog and a store that answers; /livez is 200.
func TestHealthzReady(t *testing.T) {
	e := newManager(t, "", nil)
	if code, body := probe(t, e.m, "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("healthz %d %q", code, body)
	}
	if code, _ := probe(t, e.m, "/livez"); code != http.StatusOK {
		t.Fatalf("livez %d", code)
	}
	// An origin reached with no title is a catalog too: ready.
	empty := newManagerWith(t, "", nil, nil)
	if code, body := probe(t, empty.m, "/healthz"); code != http.StatusOK {
		t.Fatalf("origin without titles: healthz %d %q", code, body)
	}
}

// A manager whose origin was never reached and whose store holds no
// catalog is not ready (503, the reason said) until the origin answers;
// one whose store holds the catalog from before is ready at once.
func TestHealthzNoCatalog(t *testing.T) {
	addr := freeAddr(t)
	dir := t.TempDir()
	m := startBare(t, func(m *Manager) { m.OriginAddr, m.DataDir, m.CatalogRefresh = addr, dir, 100*time.Millisecond })
	if code, body := probe(t, m, "/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "no catalog yet") {
		t.Fatalf("no catalog: healthz %d %q", code, body)
	}
	if code, _ := probe(t, m, "/livez"); code != http.StatusOK {
		t.Fatalf("no catalog: livez %d", code)
	}
	o := startOrigin(t, addr, testTitles)
	awaitProbe(t, m, "/healthz", http.StatusOK, "ok")
	if len(m.titles()) == 0 {
		t.Fatal("ready without the catalog")
	}
	m.Close()
	o.srv.Stop()

	// The catalog is in the store now: the origin down is no reason to refuse.
	again := startBare(t, func(m *Manager) { m.OriginAddr, m.DataDir = addr, dir })
	if code, body := probe(t, again, "/healthz"); code != http.StatusOK {
		t.Fatalf("stored catalog, origin down: healthz %d %q", code, body)
	}
}

// A store that stops answering makes /healthz 503 within a health check,
// without a store read per probe, and 200 again when it is back.
func TestHealthzStore(t *testing.T) {
	e, ds, _ := managerOnDownStore(t)
	if code, _ := probe(t, e.m, "/healthz"); code != http.StatusOK {
		t.Fatalf("healthz %d", code)
	}
	ds.down.Store(true)
	awaitProbe(t, e.m, "/healthz", http.StatusServiceUnavailable, "not ready: store unavailable")
	if code, body := probe(t, e.m, "/healthz"); strings.Contains(body, "refused") || code != http.StatusServiceUnavailable {
		t.Fatalf("healthz %d %q: the store's error is for the log, not the public front door", code, body)
	}
	ds.down.Store(false)
	awaitProbe(t, e.m, "/healthz", http.StatusOK, "ok")

	// Probes are answered from the state kept while the store answered
	// within healthzFresh (read every 20 ms here): many probes, few reads.
	before := ds.reads.Load()
	for range 50 {
		probe(t, e.m, "/healthz")
	}
	if n := ds.reads.Load() - before; n >= 50 {
		t.Fatalf("%d store reads for 50 probes", n)
	}

	// A session write that fails counts at once.
	e.startNode("n1", nodeOpts{})
	ds.down.Store(true)
	e.describe("demo", "demo", "t1")
	if code, _ := probe(t, e.m, "/healthz"); code != http.StatusServiceUnavailable {
		t.Fatalf("after a failed session write: healthz %d", code)
	}
	// Meanwhile requests are refused at once (503 with Retry-After), not
	// after the store's timeout, and nothing stays reserved.
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != 503 || len(res.Header["Retry-After"]) != 1 {
		t.Fatalf("store down: %d %v, want 503 with Retry-After", res.StatusCode, res.Header)
	}
	if got := e.reserved("n1"); got != 0 {
		t.Fatalf("store down: %d bit/s reserved", got)
	}
	ds.down.Store(false)
	awaitProbe(t, e.m, "/healthz", http.StatusOK, "ok")
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != 302 {
		t.Fatalf("store back: %d", res.StatusCode)
	}
}

// A session that ends while the store is down keeps its entry there only
// until the store answers again: its delete is retried then.
func TestDeleteRetriedWhenStoreReturns(t *testing.T) {
	e, ds, b := managerOnDownStore(t)
	n := e.startNode("n1", nodeOpts{})
	a := e.admitOne("t1")
	if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	ds.down.Store(true)
	if err := n.event(a, pb.SessionEvent_KIND_ENDED); err == nil {
		t.Fatal("ENDED acknowledged while its delete failed")
	}
	if e.session(a) != nil {
		t.Fatal("the session is still in the table")
	}
	if _, err := b.Session(context.Background(), a); err != nil {
		t.Fatalf("the store lost the entry while down: %v", err)
	}
	ds.down.Store(false)
	waitFor(t, 5*time.Second, "the entry deleted once the store answers", func() bool {
		_, err := b.Session(context.Background(), a)
		return errors.Is(err, store.ErrNotFound)
	})
}

// TestStoreMsgOnePrefix: messages name the store once, whether or not its
// error says "store: " itself (the store's own errors read "store: …";
// messages read "store: store: …" before), and a chain of wrappings
// reads without the package names stacked in it ("store: acm: load node
// settings: store: redis: …" before).
func TestStoreMsgOnePrefix(t *testing.T) {
	for in, want := range map[error]string{
		errors.New("store: redis: 127.0.0.1:6379: connection refused"): "redis: 127.0.0.1:6379: connection refused",
		errors.New("connection refused"):                               "store: connection refused",
		context.DeadlineExceeded:                                       "store: context deadline exceeded",
		fmt.Errorf("acm: load node settings: %w", errors.New("store: redis: state node-settings: dial tcp 127.0.0.1:1: connect: connection refused")): "load node settings: redis: state node-settings: dial tcp 127.0.0.1:1: connect: connection refused",
		fmt.Errorf("acm: load pins: %w", store.ErrClosed):                "store: load pins: closed",
		errors.New("store: redis 127.0.0.1:6379: dial tcp: i/o timeout"): "redis 127.0.0.1:6379: dial tcp: i/o timeout",
	} {
		if got := storeMsg(in); got != want {
			t.Errorf("storeMsg(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMalformedIDsClippedInErrors: a malformed node or title id is
// refused with its first bytes and its length, not echoed whole (a 1 MB
// id came back in the error).
func TestMalformedIDsClippedInErrors(t *testing.T) {
	e := newManager(t, "", nil)
	huge := strings.Repeat("x", 1<<20) + "!"
	ctx := context.Background()
	_, err1 := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: huge})
	_, err2 := e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: huge})
	_, err3 := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: huge, NodeId: "n1"})
	_, err4 := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: huge})
	for i, err := range []error{err1, err2, err3, err4} {
		if grpcCode(err) != codes.InvalidArgument || len(err.Error()) > 300 || !strings.Contains(err.Error(), "1048577 bytes") {
			t.Errorf("call %d: %d-byte error %.200q, want INVALID_ARGUMENT naming the length", i+1, len(err.Error()), err)
		}
	}
}
