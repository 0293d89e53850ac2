package store

import (
	"context"
	"errors"
	"testing"

	"vodcluster/acm/store/redistest"
)

// TestRedisHeldByUndecodableEntry: a compare-and-set or -delete of a
// session whose stored entry is not a JSON session fails with
// ErrUndecodable (its manager cannot be told) and leaves the entry as
// is; the entries next to it are still written and deleted.
func TestRedisHeldByUndecodableEntry(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	r := openRedis(t, RedisOptions{Addr: srv.Addr})
	raw := srv.Client(t)
	bad := map[string]string{"s-garbled": `{"id":"s-garbled","manager":`, "s-number": "42"}
	for id, v := range bad {
		if err := raw.HSet(ctx, r.key(redisSessions), id, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"s-put", "s-del"} {
		if err := r.PutSession(ctx, Session{ID: id, User: "u", Title: "t", Node: "n", Manager: "mgr-a"}); err != nil {
			t.Fatal(err)
		}
	}
	for id, v := range bad {
		if ok, err := r.PutSessionHeldBy(ctx, Session{ID: id, Manager: "mgr-a"}, "mgr-a", ""); ok || !errors.Is(err, ErrUndecodable) {
			t.Errorf("put over %s: %v %v, want ErrUndecodable", id, ok, err)
		}
		if ok, err := r.DeleteSessionHeldBy(ctx, id, "mgr-a", ""); ok || !errors.Is(err, ErrUndecodable) {
			t.Errorf("delete of %s: %v %v, want ErrUndecodable", id, ok, err)
		}
		if got, err := raw.HGet(ctx, r.key(redisSessions), id).Result(); err != nil || got != v {
			t.Errorf("entry %s after the calls: %q %v, want %q kept", id, got, err, v)
		}
	}
	if ok, err := r.PutSessionHeldBy(ctx, Session{ID: "s-put", Node: "n2", Manager: "mgr-a"}, "mgr-a"); !ok || err != nil {
		t.Fatalf("put over s-put: %v %v", ok, err)
	}
	if ok, err := r.DeleteSessionHeldBy(ctx, "s-del", "mgr-a"); !ok || err != nil {
		t.Fatalf("delete of s-del: %v %v", ok, err)
	}
}
