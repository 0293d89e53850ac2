package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"vodcluster/acm/store/redistest"
)

// backend opens a store of one kind for a conformance test; reopen closes
// s and opens the same data again.
type backend struct {
	name   string
	open   func(t *testing.T) Store
	reopen func(t *testing.T, s Store) Store
}

// backends returns the two Store backends: badger in a temporary
// directory, and Redis on a redis-server started for the test (each open
// under a prefix of its own, so tests never see each other's keys).
func backends(t *testing.T) []backend {
	var (
		once   sync.Once
		server *redistest.Server
		n      int
		mu     sync.Mutex
	)
	redisAt := func(t *testing.T, prefix string) Store {
		r, err := OpenRedis(RedisOptions{Addr: server.Addr, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	return []backend{
		{
			name: "badger",
			open: func(t *testing.T) Store {
				b, err := OpenBadger(t.TempDir(), nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { b.Close() })
				return b
			},
			reopen: func(t *testing.T, s Store) Store {
				dir := s.(*Badger).db.Opts().Dir
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				b, err := OpenBadger(dir, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { b.Close() })
				return b
			},
		},
		{
			name: "redis",
			open: func(t *testing.T) Store {
				once.Do(func() { server = redistest.Start(t) })
				if server == nil {
					t.Skip("no redis-server")
				}
				mu.Lock()
				n++
				prefix := fmt.Sprintf("test%d:", n)
				mu.Unlock()
				return redisAt(t, prefix)
			},
			reopen: func(t *testing.T, s Store) Store {
				prefix := s.(*Redis).Prefix()
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				return redisAt(t, prefix)
			},
		},
	}
}

// forEach runs test against every backend.
func forEach(t *testing.T, test func(t *testing.T, b backend)) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) { test(t, b) })
	}
}

var at = time.Unix(1_800_000_000, 0).UTC()

func testSession(id string) Session {
	return Session{ID: id, User: "demo", Title: "t1", Node: "n1", ClientAddr: "127.0.0.1", BitrateBps: 600_000,
		State: StateAdmitted, Protocol: ProtoRTSP, AdmittedAt: at}
}

func TestConformanceSessions(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.open(t)
		if ss, _, err := s.Sessions(ctx); err != nil || len(ss) != 0 {
			t.Fatalf("empty store: %v %v", ss, err)
		}
		// Written out of order; listed in id order.
		ids := []string{"c3", "a1", "b2", "a10"}
		for _, id := range ids {
			if err := s.PutSession(ctx, testSession(id)); err != nil {
				t.Fatal(err)
			}
		}
		playing := testSession("b2")
		playing.State, playing.StartedAt, playing.Fill = StatePlaying, at.Add(time.Second), true
		playing.TokenAt = at.Add(500 * time.Millisecond) // its viewer's newer token
		if err := s.PutSession(ctx, playing); err != nil {
			t.Fatal(err)
		}
		got, err := s.Session(ctx, "b2")
		if err != nil || withoutDigest(got) != playing {
			t.Fatalf("session b2: %+v %v", got, err)
		}
		if err := s.DeleteSession(ctx, "c3"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteSession(ctx, "never-there"); err != nil {
			t.Fatalf("deleting a missing session: %v", err)
		}
		if _, err := s.Session(ctx, "c3"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("deleted session: %v", err)
		}
		if err := s.PutSession(ctx, Session{}); err == nil {
			t.Fatal("session without id accepted")
		}
		s = b.reopen(t, s)
		ss, _, err := s.Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []Session{testSession("a1"), testSession("a10"), playing}
		if len(ss) != len(want) {
			t.Fatalf("sessions after reopen: %+v", ss)
		}
		for i := range want {
			if withoutDigest(ss[i]) != want[i] {
				t.Fatalf("session %d after reopen: %+v, want %+v", i, ss[i], want[i])
			}
		}
	})
}

func TestConformanceTitles(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.open(t)
		var many []Title
		for i := range 3000 {
			many = append(many, Title{ID: fmt.Sprintf("title-%05d", 2999-i), BitrateBps: int64(i + 1), Package: "p",
				Name: "名前 " + fmt.Sprint(i), DurationS: 20.5, SizeBytes: 188 * int64(i+1), PopularityPerDay: 0.25})
		}
		if err := s.ReplaceTitles(ctx, many); err != nil {
			t.Fatal(err)
		}
		tt, err := s.Titles(ctx)
		if err != nil || len(tt) != len(many) {
			t.Fatalf("titles: %d %v", len(tt), err)
		}
		if tt[0] != many[len(many)-1] || tt[len(tt)-1] != many[0] {
			t.Fatalf("titles not in id order: %+v ... %+v", tt[0], tt[len(tt)-1])
		}
		// Absent titles are removed; a kept one takes its new value.
		next := []Title{{ID: "zz", BitrateBps: 1}, {ID: "title-00007", BitrateBps: 99}}
		if err := s.ReplaceTitles(ctx, next); err != nil {
			t.Fatal(err)
		}
		s = b.reopen(t, s)
		tt, err = s.Titles(ctx)
		if err != nil || len(tt) != 2 || tt[0] != next[1] || tt[1] != next[0] {
			t.Fatalf("titles after replace and reopen: %+v %v", tt, err)
		}
		if err := s.ReplaceTitles(ctx, []Title{{ID: "ok"}, {}}); err == nil {
			t.Fatal("title without id accepted")
		}
		if tt, _ := s.Titles(ctx); len(tt) != 2 {
			t.Fatalf("a refused catalog changed the stored one: %+v", tt)
		}
		if err := s.ReplaceTitles(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if tt, err := s.Titles(ctx); err != nil || len(tt) != 0 {
			t.Fatalf("empty catalog: %+v %v", tt, err)
		}
		if ss, _, _ := s.Sessions(ctx); len(ss) != 0 {
			t.Fatalf("titles leaked into sessions: %+v", ss)
		}
	})
}

// TestConformanceReplaceTitlesAtomic: readers during replacements see one
// whole catalog or the other, never a mix or a part.
func TestConformanceReplaceTitlesAtomic(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.open(t)
		cat := func(p string, n int) []Title {
			out := make([]Title, n)
			for i := range out {
				out[i] = Title{ID: fmt.Sprintf("%s-%04d", p, i), BitrateBps: 1}
			}
			return out
		}
		cats := [][]Title{cat("a", 1000), cat("b", 700)}
		if err := s.ReplaceTitles(ctx, cats[0]); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		errc := make(chan error, 1)
		var reads int
		go func() {
			defer close(errc)
			for {
				select {
				case <-stop:
					return
				default:
				}
				tt, err := s.Titles(ctx)
				if err != nil {
					errc <- err
					return
				}
				reads++
				if len(tt) == 0 {
					errc <- errors.New("empty catalog seen")
					return
				}
				p, _, _ := strings.Cut(tt[0].ID, "-")
				want := map[string]int{"a": 1000, "b": 700}[p]
				if len(tt) != want || !strings.HasPrefix(tt[len(tt)-1].ID, p+"-") {
					errc <- fmt.Errorf("mixed or partial catalog: %d titles, first %s, last %s", len(tt), tt[0].ID, tt[len(tt)-1].ID)
					return
				}
			}
		}()
		for i := range 30 {
			if err := s.ReplaceTitles(ctx, cats[(i+1)%2]); err != nil {
				t.Fatal(err)
			}
		}
		close(stop)
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if reads == 0 {
			t.Fatal("no read ran")
		}
	})
}

func TestConformanceState(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.open(t)
		v := []byte(`[{"title":"t1"}]`)
		if err := s.PutState(ctx, "pins", v); err != nil {
			t.Fatal(err)
		}
		v[0] = 'X' // the caller's buffer is not the stored value
		if err := s.PutState(ctx, "popularity", []byte{0, 1, 2, 0xff}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutState(ctx, "empty", nil); err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"", "Pins", "a/b", "with space", strings.Repeat("a", 65)} {
			if err := s.PutState(ctx, bad, nil); err == nil {
				t.Errorf("state name %q accepted", bad)
			}
		}
		if _, err := s.State(ctx, "nothing"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("missing state: %v", err)
		}
		s = b.reopen(t, s)
		for name, want := range map[string][]byte{"pins": []byte(`[{"title":"t1"}]`), "popularity": {0, 1, 2, 0xff}, "empty": nil} {
			got, err := s.State(ctx, name)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("state %s after reopen: %q %v", name, got, err)
			}
		}
		if err := s.PutState(ctx, "pins", []byte("[]")); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.State(ctx, "pins"); string(got) != "[]" {
			t.Fatalf("replaced pins: %q", got)
		}
		ss, _, _ := s.Sessions(ctx)
		ts, _ := s.Titles(ctx)
		if len(ss) != 0 || len(ts) != 0 {
			t.Fatalf("state leaked into sessions %v or titles %v", ss, ts)
		}
	})
}

// TestConformanceClosed: after Close every call fails with ErrClosed, and
// a second Close is not an error.
func TestConformanceClosed(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.open(t)
		if err := s.PutSession(ctx, testSession("a")); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second close: %v", err)
		}
		calls := map[string]error{
			"PutSession":    s.PutSession(ctx, testSession("b")),
			"DeleteSession": s.DeleteSession(ctx, "a"),
			"ReplaceTitles": s.ReplaceTitles(ctx, []Title{{ID: "t"}}),
			"PutState":      s.PutState(ctx, "pins", nil),
		}
		_, calls["Session"] = s.Session(ctx, "a")
		_, _, calls["Sessions"] = s.Sessions(ctx)
		_, calls["Titles"] = s.Titles(ctx)
		_, calls["State"] = s.State(ctx, "pins")
		for name, err := range calls {
			if !errors.Is(err, ErrClosed) {
				t.Errorf("%s after Close: %v, want ErrClosed", name, err)
			}
		}
		// Nothing written after Close reached the store.
		s = b.reopen(t, s)
		ss, _, err := s.Sessions(ctx)
		if err != nil || len(ss) != 1 || ss[0].ID != "a" {
			t.Fatalf("sessions after reopen: %+v %v", ss, err)
		}
	})
}

// TestConformanceDoneContext: a call with a done context fails with the
// context's error and changes nothing.
func TestConformanceDoneContext(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		s := b.open(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := s.PutSession(ctx, testSession("a")); !errors.Is(err, context.Canceled) {
			t.Fatalf("PutSession with a cancelled context: %v", err)
		}
		if _, _, err := s.Sessions(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Sessions with a cancelled context: %v", err)
		}
		dl, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel2()
		if err := s.ReplaceTitles(dl, []Title{{ID: "t"}}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("ReplaceTitles past its deadline: %v", err)
		}
		if _, err := s.State(dl, "pins"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("State past its deadline: %v", err)
		}
		if ss, _, _ := s.Sessions(context.Background()); len(ss) != 0 {
			t.Fatalf("written with a cancelled context: %+v", ss)
		}
		if tt, _ := s.Titles(context.Background()); len(tt) != 0 {
			t.Fatalf("written past the deadline: %+v", tt)
		}
	})
}

// TestConformanceConcurrentWriters: writers putting, updating and
// deleting their own sessions at once, with readers listing, end with
// exactly the sessions each kept, in their last state.
func TestConformanceConcurrentWriters(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.open(t)
		const writers, each = 8, 40
		var wg sync.WaitGroup
		errc := make(chan error, writers+1)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					x := testSession(fmt.Sprintf("w%d-%03d", w, i))
					if err := s.PutSession(ctx, x); err != nil {
						errc <- err
						return
					}
					x.State, x.StartedAt = StatePlaying, at.Add(time.Duration(i)*time.Second)
					if err := s.PutSession(ctx, x); err != nil {
						errc <- err
						return
					}
					if i%2 == 1 {
						if err := s.DeleteSession(ctx, x.ID); err != nil {
							errc <- err
							return
						}
					}
				}
			}()
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 20 {
				if _, _, err := s.Sessions(ctx); err != nil {
					errc <- err
					return
				}
			}
		}()
		wg.Wait()
		<-done
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		ss, _, err := s.Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ss) != writers*each/2 {
			t.Fatalf("%d sessions, want %d", len(ss), writers*each/2)
		}
		for i, x := range ss {
			if i > 0 && ss[i-1].ID >= x.ID {
				t.Fatalf("not in id order: %s before %s", ss[i-1].ID, x.ID)
			}
			var w, n int
			if _, err := fmt.Sscanf(x.ID, "w%d-%d", &w, &n); err != nil || n%2 != 0 || x.State != StatePlaying {
				t.Fatalf("unexpected session %+v", x)
			}
		}
	})
}

// withoutDigest returns s without its Digest (a shared store's mark of
// the entry it read s from), to compare with a session written.
func withoutDigest(s Session) Session {
	s.Digest = ""
	return s
}
