package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"vodcluster/acm/store/redistest"
)

func openRedis(t *testing.T, o RedisOptions) *Redis {
	t.Helper()
	r, err := OpenRedis(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestRedisPrefixesIsolate: two clusters on one Redis under two prefixes
// (and a third database) never see each other's sessions, titles, state
// or locks; the default prefix is DefaultRedisPrefix.
func TestRedisPrefixesIsolate(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	a := openRedis(t, RedisOptions{Addr: srv.Addr})
	b := openRedis(t, RedisOptions{Addr: srv.Addr, Prefix: "other:"})
	c := openRedis(t, RedisOptions{Addr: srv.Addr, DB: 1})
	if a.Prefix() != DefaultRedisPrefix {
		t.Fatalf("default prefix %q", a.Prefix())
	}
	if err := a.PutSession(ctx, testSession("s1")); err != nil {
		t.Fatal(err)
	}
	if err := a.ReplaceTitles(ctx, []Title{{ID: "t1"}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PutState(ctx, "pins", []byte("[]")); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.TryLock(ctx, "planner", "a", time.Minute); !ok || err != nil {
		t.Fatalf("lock: %v %v", ok, err)
	}
	for name, o := range map[string]*Redis{"prefix": b, "db": c} {
		if ss, _, err := o.Sessions(ctx); err != nil || len(ss) != 0 {
			t.Errorf("%s: sessions of the other cluster: %v %v", name, ss, err)
		}
		if tt, err := o.Titles(ctx); err != nil || len(tt) != 0 {
			t.Errorf("%s: titles of the other cluster: %v %v", name, tt, err)
		}
		if _, err := o.State(ctx, "pins"); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: state of the other cluster: %v", name, err)
		}
		if ok, err := o.TryLock(ctx, "planner", "b", time.Minute); !ok || err != nil {
			t.Errorf("%s: lock held by the other cluster: %v %v", name, ok, err)
		}
	}
	raw := srv.Client(t)
	n, err := raw.Exists(ctx, "vodcluster:sessions", "vodcluster:titles", "vodcluster:state", "vodcluster:lock:planner").Result()
	if err != nil || n != 4 {
		t.Fatalf("keys under the default prefix: %d %v", n, err)
	}
}

// TestRedisDeadlineHonoured: while the server answers nobody (CLIENT
// PAUSE), a call returns with its context's deadline, and the store works
// again once the server does.
func TestRedisDeadlineHonoured(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	r := openRedis(t, RedisOptions{Addr: srv.Addr})
	if err := srv.Client(t).Do(ctx, "CLIENT", "PAUSE", "1000", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := r.PutSession(short, testSession("s1")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("put while the server is paused: %v, want DeadlineExceeded", err)
	}
	long, cancel2 := context.WithTimeout(ctx, 10*time.Second)
	defer cancel2()
	if err := r.PutSession(long, testSession("s2")); err != nil {
		t.Fatalf("put after the pause: %v", err)
	}
	if _, err := r.Session(long, "s2"); err != nil {
		t.Fatal(err)
	}
}

// TestRedisStall: while the server's process is stopped (SIGSTOP: alive,
// its port open, answering nothing, as a stalled Redis or a network black
// hole), a call ends with its context's deadline, not after go-redis's
// read timeouts and retries (3 s each); once the server runs again the
// store works at once (a connection that timed out is not reused with a
// reply half read). A server that is down fails a call on its refused
// connections, not at the call's deadline.
func TestRedisStall(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	r := openRedis(t, RedisOptions{Addr: srv.Addr})
	if err := r.PutSession(ctx, testSession("s0")); err != nil {
		t.Fatal(err)
	}
	srv.Pause(t)
	for _, call := range []func(context.Context) error{
		func(ctx context.Context) error { return r.PutSession(ctx, testSession("s1")) },
		func(ctx context.Context) error { _, err := r.Session(ctx, "s0"); return err },
		func(ctx context.Context) error { return r.DeleteSession(ctx, "s0") },
	} {
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err := call(short)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("call while the server is stopped: %v, want DeadlineExceeded", err)
		}
	}
	srv.Resume()
	long, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.PutSession(long, testSession("s2")); err != nil {
		t.Fatalf("put once the server runs again: %v", err)
	}
	if s, err := r.Session(long, "s2"); err != nil || s.ID != "s2" {
		t.Fatalf("session once the server runs again: %+v %v", s, err)
	}
	srv.Stop()
	if err := r.PutSession(long, testSession("s3")); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("put with the server dead: %v, want the refused connection's error before the deadline", err)
	}
}

// TestRedisServerGone: with the server dead, calls fail (not found is not
// an answer a dead server gives), each within its deadline.
func TestRedisServerGone(t *testing.T) {
	srv := redistest.Start(t)
	r := openRedis(t, RedisOptions{Addr: srv.Addr})
	srv.Stop()
	call := func(f func(ctx context.Context) error) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return f(ctx)
	}
	if err := call(func(ctx context.Context) error { return r.PutSession(ctx, testSession("s1")) }); err == nil {
		t.Fatal("put with the server dead succeeded")
	}
	if err := call(func(ctx context.Context) error { _, err := r.Session(ctx, "s1"); return err }); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("session with the server dead: %v", err)
	}
	if err := call(func(ctx context.Context) error { _, err := r.TryLock(ctx, "planner", "a", time.Second); return err }); err == nil {
		t.Fatal("lock with the server dead succeeded")
	}
}

func TestOpenRedisErrors(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", "s3cret-pass")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := ln.Addr().String()
	ln.Close()
	for name, o := range map[string]RedisOptions{
		"no address":     {},
		"negative db":    {Addr: srv.Addr, Password: "s3cret-pass", DB: -1},
		"wrong password": {Addr: srv.Addr, Password: "wrong"},
		"no password":    {Addr: srv.Addr},
		"nobody there":   {Addr: closedAddr, DialTimeout: time.Second},
	} {
		if r, err := OpenRedis(o); err == nil {
			r.Close()
			t.Errorf("%s: opened", name)
		}
	}
	r := openRedis(t, RedisOptions{Addr: srv.Addr, Password: "s3cret-pass"})
	if err := r.PutSession(context.Background(), testSession("s1")); err != nil {
		t.Fatal(err)
	}
}

// TestRedisLock: the lease is held by one holder at a time, renewed and
// released only by its holder, and expires.
func TestRedisLock(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	r := openRedis(t, RedisOptions{Addr: srv.Addr})
	r2 := openRedis(t, RedisOptions{Addr: srv.Addr}) // the other manager
	must := func(ok bool, err error) bool {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !must(r.TryLock(ctx, "planner", "a", time.Minute)) {
		t.Fatal("free lock not taken")
	}
	if must(r2.TryLock(ctx, "planner", "b", time.Minute)) {
		t.Fatal("held lock taken by another holder")
	}
	// A take by the holder extends the lease: true always means ttl from
	// now (a renewal whose answer was lost left the key with a short
	// lease; the holder's next take must not trust it).
	srv.Client(t).PExpire(ctx, DefaultRedisPrefix+"lock:planner", 200*time.Millisecond)
	if !must(r.TryLock(ctx, "planner", "a", time.Minute)) {
		t.Fatal("holder's second TryLock says not held")
	}
	if ttl := srv.Client(t).PTTL(ctx, DefaultRedisPrefix+"lock:planner").Val(); ttl <= 30*time.Second {
		t.Fatalf("ttl after the holder's second take for a minute: %v", ttl)
	}
	if must(r2.RenewLock(ctx, "planner", "b", time.Minute)) {
		t.Fatal("renewed by a holder that does not hold it")
	}
	if !must(r.RenewLock(ctx, "planner", "a", time.Hour)) {
		t.Fatal("holder's renewal refused")
	}
	if ttl := srv.Client(t).PTTL(ctx, DefaultRedisPrefix+"lock:planner").Val(); ttl <= time.Minute {
		t.Fatalf("ttl after renewal to an hour: %v", ttl)
	}
	if h, err := r2.LockHolder(ctx, "planner"); h != "a" || err != nil {
		t.Fatalf("holder of a held lock: %q, %v; want a", h, err)
	}
	if h, err := r2.LockHolder(ctx, "never"); h != "" || err != nil {
		t.Fatalf("holder of a lock never taken: %q, %v; want none", h, err)
	}
	if must(r2.Unlock(ctx, "planner", "b")) {
		t.Fatal("released by a holder that does not hold it")
	}
	if must(r2.TryLock(ctx, "planner", "b", time.Minute)) {
		t.Fatal("taken after a refused release")
	}
	if !must(r.Unlock(ctx, "planner", "a")) {
		t.Fatal("holder's release refused")
	}
	if h, err := r2.LockHolder(ctx, "planner"); h != "" || err != nil {
		t.Fatalf("holder of a released lock: %q, %v; want none", h, err)
	}
	if !must(r2.TryLock(ctx, "planner", "b", time.Minute)) {
		t.Fatal("released lock not taken")
	}

	// A holder that stops renewing loses the lock when its ttl runs out.
	if !must(r.TryLock(ctx, "short", "a", 50*time.Millisecond)) {
		t.Fatal("short lock not taken")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !must(r2.TryLock(ctx, "short", "b", time.Minute)) {
		if time.Now().After(deadline) {
			t.Fatal("a 50ms lock did not expire within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if must(r.RenewLock(ctx, "short", "a", time.Minute)) {
		t.Fatal("expired holder renewed a lock another holder took")
	}

	for name, call := range map[string]func() (bool, error){
		"bad name":     func() (bool, error) { return r.TryLock(ctx, "Bad Name", "a", time.Second) },
		"empty holder": func() (bool, error) { return r.TryLock(ctx, "planner", "", time.Second) },
		"zero ttl":     func() (bool, error) { return r.RenewLock(ctx, "planner", "a", 0) },
		"unlock name":  func() (bool, error) { return r.Unlock(ctx, "", "a") },
		"holder name":  func() (bool, error) { _, err := r.LockHolder(ctx, "Bad Name"); return false, err },
	} {
		if _, err := call(); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	r.Close()
	if _, err := r.TryLock(ctx, "planner", "a", time.Second); !errors.Is(err, ErrClosed) {
		t.Fatalf("lock after close: %v", err)
	}
	if _, err := r.Unlock(ctx, "planner", "a"); !errors.Is(err, ErrClosed) {
		t.Fatalf("unlock after close: %v", err)
	}
	if _, err := r.LockHolder(ctx, "planner"); !errors.Is(err, ErrClosed) {
		t.Fatalf("holder after close: %v", err)
	}
}

// TestRedisTLS: a Redis that speaks only TLS is reached with the TLS
// option and a configuration trusting its certificate; without TLS, or
// trusting another CA, OpenRedis fails.
func TestRedisTLS(t *testing.T) {
	srv := redistest.StartTLS(t)
	r := openRedis(t, RedisOptions{Addr: srv.Addr, TLS: srv.TLS})
	ctx := context.Background()
	if err := r.PutSession(ctx, testSession("s1")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Session(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	// The configuration cmd builds from redis_tls_ca_file.
	ca, err := RedisTLS(srv.Addr, srv.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	openRedis(t, RedisOptions{Addr: srv.Addr, TLS: ca}).Close()
	untrusted, err := RedisTLS(srv.Addr, "") // the system's roots: the test CA is not among them
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][2]string{{"no-port", ""}, {srv.Addr, "/nonexistent"}, {srv.Addr, srv.CAFile + ".none"}} {
		if _, err := RedisTLS(bad[0], bad[1]); err == nil {
			t.Errorf("RedisTLS(%q, %q) accepted", bad[0], bad[1])
		}
	}
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	os.WriteFile(notPEM, []byte("not a certificate"), 0o600)
	if _, err := RedisTLS(srv.Addr, notPEM); err == nil {
		t.Error("a CA file without PEM accepted")
	}
	for name, o := range map[string]RedisOptions{
		"plain":     {Addr: srv.Addr, DialTimeout: time.Second},
		"untrusted": {Addr: srv.Addr, TLS: untrusted, DialTimeout: time.Second},
	} {
		if r, err := OpenRedis(o); err == nil {
			r.Close()
			t.Errorf("%s: opened a TLS-only Redis", name)
		}
	}
}

// heldByCase is a call of a compare-and-set on session entry id by
// managers, and whether it acts.
type heldByCase struct {
	id       string
	managers []string
	want     bool
}

// heldByCases starts a Redis store holding session s-a of manager mgr-a
// and s-none of none, and returns it, a function that writes such an
// entry, and the cases of the *SessionHeldBy tests, in order.
func heldByCases(t *testing.T) (*Redis, func(id, manager string), []heldByCase) {
	t.Helper()
	srv := redistest.Start(t)
	r := openRedis(t, RedisOptions{Addr: srv.Addr})
	put := func(id, manager string) {
		t.Helper()
		if err := r.PutSession(context.Background(), Session{ID: id, User: "u", Title: "t", Node: "n", Manager: manager}); err != nil {
			t.Fatal(err)
		}
	}
	put("s-a", "mgr-a")
	put("s-none", "")
	return r, put, []heldByCase{
		{"s-a", []string{"mgr-b"}, false},
		{"s-a", []string{"mgr-b", ""}, false},
		{"s-a", nil, false},
		{"s-none", []string{"mgr-b"}, false},
		{"missing", []string{"mgr-a", ""}, false},
		{"s-a", []string{"mgr-b", "mgr-a"}, true},
		{"s-none", []string{"mgr-b", ""}, true},
	}
}

// TestRedisDeleteSessionHeldBy: a session is deleted only when its
// manager is one of those named, in one step.
func TestRedisDeleteSessionHeldBy(t *testing.T) {
	ctx := context.Background()
	r, _, cases := heldByCases(t)
	for _, c := range cases {
		got, err := r.DeleteSessionHeldBy(ctx, c.id, "", c.managers...)
		if err != nil || got != c.want {
			t.Fatalf("%s by %q: %v %v, want %v", c.id, c.managers, got, err, c.want)
		}
		_, err = r.Session(ctx, c.id)
		if gone := errors.Is(err, ErrNotFound); gone != (c.want || c.id == "missing") {
			t.Fatalf("%s by %q: gone %v", c.id, c.managers, gone)
		}
	}
}

// TestRedisPutSessionHeldBy: a session is written over its entry only
// when the entry's manager is one of those named, in one step; a missing
// entry is not written.
func TestRedisPutSessionHeldBy(t *testing.T) {
	ctx := context.Background()
	r, put, cases := heldByCases(t)
	for _, c := range cases {
		before, _ := r.Session(ctx, c.id)
		got, err := r.PutSessionHeldBy(ctx, Session{ID: c.id, User: "u", Title: "t", Node: "n2", Manager: "mgr-b"}, "", c.managers...)
		if err != nil || got != c.want {
			t.Fatalf("%s by %q: %v %v, want %v", c.id, c.managers, got, err, c.want)
		}
		after, err := r.Session(ctx, c.id)
		switch {
		case c.id == "missing":
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("a missing entry written: %+v %v", after, err)
			}
		case err != nil:
			t.Fatal(err)
		case c.want && (after.Node != "n2" || after.Manager != "mgr-b"):
			t.Fatalf("%s by %q: %+v, want written", c.id, c.managers, after)
		case !c.want && (after.Node != before.Node || after.Manager != before.Manager):
			t.Fatalf("%s by %q: %+v, want %+v kept", c.id, c.managers, after, before)
		}
		if c.want {
			put(c.id, before.Manager) // back for the next cases
		}
	}
	if _, err := r.PutSessionHeldBy(ctx, Session{}, "", "mgr-a"); err == nil {
		t.Fatal("a session without id accepted")
	}
}

// TestRedisUnchangedCatalogNotRewritten: ReplaceTitles with the catalog
// already stored writes nothing (the manager refreshes it every minute);
// a changed title, or a titles hash Redis lost, is written.
func TestRedisUnchangedCatalogNotRewritten(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	r := openRedis(t, RedisOptions{Addr: srv.Addr})
	raw := srv.Client(t)
	writes := func() int64 {
		t.Helper()
		info, err := raw.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		var calls int64
		for _, line := range strings.Split(info, "\n") {
			if strings.HasPrefix(line, "cmdstat_hset:") {
				fmt.Sscanf(strings.TrimPrefix(line, "cmdstat_hset:"), "calls=%d", &calls)
			}
		}
		return calls
	}
	cat := make([]Title, 2500) // three HSETs of redisBatch
	for i := range cat {
		cat[i] = Title{ID: fmt.Sprintf("t%04d", i), Name: "T", BitrateBps: 600_000}
	}
	if err := r.ReplaceTitles(ctx, cat); err != nil {
		t.Fatal(err)
	}
	first := writes()
	if first != 3 {
		t.Fatalf("%d HSETs for the first catalog, want 3", first)
	}
	if err := r.ReplaceTitles(ctx, cat); err != nil {
		t.Fatal(err)
	}
	if got := writes(); got != first {
		t.Fatalf("the unchanged catalog written again: %d HSETs, want %d", got, first)
	}
	cat[7].Name = "renamed"
	if err := r.ReplaceTitles(ctx, cat); err != nil {
		t.Fatal(err)
	}
	if got := writes(); got != first+3 {
		t.Fatalf("a changed catalog: %d HSETs, want %d", got, first+3)
	}
	if ts, err := r.Titles(ctx); err != nil || len(ts) != len(cat) || ts[7].Name != "renamed" {
		t.Fatalf("stored catalog after the change: %d titles, %v", len(ts), err)
	}
	if err := raw.Del(ctx, "vodcluster:titles").Err(); err != nil { // Redis lost the hash, not the digest
		t.Fatal(err)
	}
	if err := r.ReplaceTitles(ctx, cat); err != nil {
		t.Fatal(err)
	}
	if ts, err := r.Titles(ctx); err != nil || len(ts) != len(cat) {
		t.Fatalf("catalog lost by Redis not written again: %d titles, %v", len(ts), err)
	}
	if err := r.ReplaceTitles(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if ts, err := r.Titles(ctx); err != nil || len(ts) != 0 {
		t.Fatalf("empty catalog: %d titles, %v", len(ts), err)
	}
}

// TestRedisLogsThroughSlog: go-redis's own messages (here its connection
// pool failing to dial a server that stopped) go to the process's log
// (slog.Default, component=redis), not to standard error in go-redis's
// format, which broke --log-format json.
func TestRedisLogsThroughSlog(t *testing.T) {
	srv := redistest.Start(t)
	r := openRedis(t, RedisOptions{Addr: srv.Addr, DialTimeout: time.Second})
	var buf syncBuf
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(old) })
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.State(ctx, "pins"); err == nil {
		t.Fatal("a stopped server answered")
	}
	var seen bool
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var rec struct{ Msg, Component string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		seen = seen || (rec.Component == "redis" && strings.Contains(rec.Msg, "dial"))
	}
	if !seen {
		t.Fatalf("no go-redis message in the process's log: %q", buf.String())
	}
}

// syncBuf is a bytes.Buffer safe for concurrent writes (log handlers).
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRedisPutStateFenced: a state write whose caller gave up (its
// context's deadline passed while Redis's process was stopped, the write
// in its socket) was applied when Redis ran again, though the caller had
// reported it not done ("suspension not changed"). It is now fenced by
// the deadline: the write sent to a stalled Redis is a read of its clock,
// and the write itself, a script, does nothing once Redis's clock passed
// the fence. A write within its deadline, or without one, is applied.
func TestRedisPutStateFenced(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	r := openRedis(t, RedisOptions{Addr: srv.Addr})
	long, cancel2 := context.WithTimeout(ctx, 10*time.Second)
	defer cancel2()
	if err := r.PutState(long, "late", []byte("v0")); err != nil { // a connection in the pool
		t.Fatal(err)
	}
	srv.Pause(t)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := r.PutState(short, "late", []byte("v1")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("put while Redis is stopped: %v, want DeadlineExceeded", err)
	}
	srv.Resume()
	if err := r.PutState(long, "probe", []byte("x")); err != nil { // read by Redis after the late one
		t.Fatalf("put after the stall: %v", err)
	}
	if b, err := r.State(long, "late"); err != nil || string(b) != "v0" {
		t.Fatalf("write whose caller gave up: %q %v, want v0 (it was applied when Redis ran again)", b, err)
	}
	// The script run after its fence (as one sent just before a stall).
	at, err := r.c.Time(long).Result()
	if err != nil {
		t.Fatal(err)
	}
	n, err := fencedPutScript.Run(long, r.c, []string{r.key(redisState)}, "late", "v1", strconv.FormatInt(at.Add(-time.Second).UnixMilli(), 10)).Int()
	if err != nil || n != 0 {
		t.Fatalf("write run past its fence: %d %v, want 0 (not written)", n, err)
	}
	if b, err := r.State(long, "late"); err != nil || string(b) != "v0" {
		t.Fatalf("write run past its fence: %q %v, want v0", b, err)
	}
	if err := r.PutState(long, "late", []byte("v2")); err != nil {
		t.Fatal(err)
	}
	if b, err := r.State(long, "late"); err != nil || string(b) != "v2" {
		t.Fatalf("write within its deadline: %q %v, want v2", b, err)
	}
	if err := r.PutState(ctx, "nodeadline", []byte("v3")); err != nil {
		t.Fatal(err)
	}
	if b, err := r.State(long, "nodeadline"); err != nil || string(b) != "v3" {
		t.Fatalf("write without a deadline: %q %v, want v3", b, err)
	}
}
