package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"vodcluster/acm/store/redistest"
)

// A take of the planner lock that timed out in a stalled Redis still runs
// once Redis answers again (its bytes wait in Redis's socket). One by a
// manager that had held the lock before another did took the lock then
// and recorded that manager as the last holder, unknown to it; its next
// take found itself holding the lock and answered kept, though the other
// manager had held it in between: the manager kept and saved, at its
// takeover, operator's changes left unsaved from its tenure before the
// other's (acm: settleUnsavedOpLocked). kept now compares the tenure
// Redis records with the one the caller was last answered it held. A
// take of its own that timed out, by the manager that was the last
// holder, still leaves its next take kept.
func TestRedisTakeLockKeptAfterATakeThatTimedOut(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	raw := srv.Client(t)
	a := openRedis(t, RedisOptions{Addr: srv.Addr}) // one manager's store
	b := openRedis(t, RedisOptions{Addr: srv.Addr}) // the other's
	key := DefaultRedisPrefix + "lock:ghost"
	take := func(r *Redis, holder string) (held, kept bool) {
		t.Helper()
		held, kept, err := r.TakeLock(ctx, "ghost", holder, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return held, kept
	}
	free := func() { raw.Del(ctx, key) } // its lease ran out
	// timedOut makes holder's take time out in a stalled Redis, and waits
	// for Redis, resumed, to run it.
	timedOut := func(r *Redis, holder string) {
		t.Helper()
		srv.Pause(t)
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, _, err := r.TakeLock(short, "ghost", holder, time.Minute)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			srv.Resume()
			t.Fatalf("take in a stalled Redis: %v, want DeadlineExceeded", err)
		}
		srv.Resume()
		for deadline := time.Now().Add(10 * time.Second); raw.Get(ctx, key).Val() != holder; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the take that timed out never ran in Redis: lock held by %q", raw.Get(ctx, key).Val())
			}
		}
	}

	if held, kept := take(b, "b"); !held || kept {
		t.Fatalf("b's first take: held %v kept %v, want held, not kept", held, kept)
	}
	free()
	if held, kept := take(a, "a"); !held || kept {
		t.Fatalf("a's take after b: held %v kept %v, want held, not kept", held, kept)
	}
	free()
	timedOut(b, "b")
	if held, kept := take(b, "b"); !held || kept {
		t.Fatalf("b's take after a held the lock (and b's take that timed out took it): held %v kept %v, want held, not kept", held, kept)
	}
	if held, kept := take(b, "b"); !held || !kept {
		t.Fatalf("b's take again: held %v kept %v, want both", held, kept)
	}
	free()
	timedOut(b, "b")
	if held, kept := take(b, "b"); !held || !kept {
		t.Fatalf("b's take after its own take that timed out, no other holder since: held %v kept %v, want both", held, kept)
	}
}

// TestRedisTakeLockKept checks TakeLock's kept answer: true only when the
// taker was the lock's last holder with no other holder since.
func TestRedisTakeLockKept(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	r := openRedis(t, RedisOptions{Addr: srv.Addr})
	// TakeLock's kept: whether the taker was the lock's last holder.
	take := func(holder string) (held, kept bool) {
		t.Helper()
		held, kept, err := r.TakeLock(ctx, "kept", holder, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return held, kept
	}
	free := func() { srv.Client(t).Del(ctx, DefaultRedisPrefix+"lock:kept") } // its lease ran out
	if held, kept := take("a"); !held || kept {
		t.Fatalf("first take of a lock never held: held %v kept %v, want held, not kept", held, kept)
	}
	if held, kept := take("a"); !held || !kept {
		t.Fatalf("take by its holder: held %v kept %v, want both", held, kept)
	}
	free()
	if held, kept := take("a"); !held || !kept {
		t.Fatalf("retake of a lock lapsed with no other holder since: held %v kept %v, want both", held, kept)
	}
	if held, kept := take("b"); held || kept {
		t.Fatalf("take of a lock another holds: held %v kept %v, want neither", held, kept)
	}
	free()
	if held, kept := take("b"); !held || kept {
		t.Fatalf("take by b after a: held %v kept %v, want held, not kept", held, kept)
	}
	free()
	if held, kept := take("a"); !held || kept {
		t.Fatalf("retake by a after b held it: held %v kept %v, want held, not kept", held, kept)
	}
}

// A lock TTL refused is quoted as the configuration writes it ("-1h"),
// not in Go's form ("-1h0m0s").
func TestCheckLockTTLWritten(t *testing.T) {
	err := checkLock("planner", "m1", -time.Hour, true)
	if err == nil || err.Error() != "store: lock ttl -1h: want at least 1ms" {
		t.Fatalf("ttl -1h: %v", err)
	}
}

// TestRedisTakeLockKeptAfterRedisLostItsData: a Redis restarted without
// its data holds no record of the lock's holders; the manager that held
// the lock takes it back kept (no other could have taken it without
// recording its tenure), so that it writes back what the store lost;
// another manager that never held it takes it not kept, and after it the
// first one's take is not kept either. (Both were not kept: the store's
// empty state replaced the active manager's.)
func TestRedisTakeLockKeptAfterRedisLostItsData(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	raw := srv.Client(t)
	a := openRedis(t, RedisOptions{Addr: srv.Addr})
	b := openRedis(t, RedisOptions{Addr: srv.Addr})
	take := func(r *Redis, holder string) (held, kept bool) {
		t.Helper()
		held, kept, err := r.TakeLock(ctx, "lost", holder, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return held, kept
	}
	if held, _ := take(a, "mgr-a"); !held {
		t.Fatal("mgr-a: lock not taken")
	}
	raw.FlushAll(ctx)
	if held, kept := take(a, "mgr-a"); !held || !kept {
		t.Fatalf("mgr-a after the data loss: held %v kept %v, want both", held, kept)
	}
	raw.FlushAll(ctx)
	if held, kept := take(b, "mgr-b"); !held || kept {
		t.Fatalf("mgr-b after the data loss: held %v kept %v, want held, not kept", held, kept)
	}
	if _, err := b.Unlock(ctx, "lost", "mgr-b"); err != nil {
		t.Fatal(err)
	}
	if held, kept := take(a, "mgr-a"); !held || kept {
		t.Fatalf("mgr-a after mgr-b held it: held %v kept %v, want held, not kept", held, kept)
	}
}
