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
		if ok, err := r.PutSessionHeldBy(ctx, Session{ID: id, Manager: "mgr-a"}, "", "mgr-a", ""); ok || !errors.Is(err, ErrUndecodable) {
			t.Errorf("put over %s: %v %v, want ErrUndecodable", id, ok, err)
		}
		if ok, err := r.DeleteSessionHeldBy(ctx, id, "", "mgr-a", ""); ok || !errors.Is(err, ErrUndecodable) {
			t.Errorf("delete of %s: %v %v, want ErrUndecodable", id, ok, err)
		}
		if got, err := raw.HGet(ctx, r.key(redisSessions), id).Result(); err != nil || got != v {
			t.Errorf("entry %s after the calls: %q %v, want %q kept", id, got, err, v)
		}
	}
	if ok, err := r.PutSessionHeldBy(ctx, Session{ID: "s-put", Node: "n2", Manager: "mgr-a"}, "", "mgr-a"); !ok || err != nil {
		t.Fatalf("put over s-put: %v %v", ok, err)
	}
	if ok, err := r.DeleteSessionHeldBy(ctx, "s-del", "", "mgr-a"); !ok || err != nil {
		t.Fatalf("delete of s-del: %v %v", ok, err)
	}
}

// TestRedisHeldByUnchangedEntry: a compare-and-set or -delete given the
// Digest of an entry as read acts on it while it is unchanged, whatever
// its manager, and not once it was rewritten since (here by the manager
// it names, the same manager: a claim made late does not take it over);
// the managers named still make it act. The digest is the same from
// Session and Sessions, and any change of the entry changes it.
func TestRedisHeldByUnchangedEntry(t *testing.T) {
	ctx := context.Background()
	r, put, _ := heldByCases(t)
	read, err := r.Session(ctx, "s-a")
	if err != nil || read.Digest == "" {
		t.Fatalf("s-a read: %+v %v, want a digest", read, err)
	}
	ss, _, err := r.Sessions(ctx)
	if err != nil || len(ss) != 2 || ss[0].ID != "s-a" || ss[0].Digest != read.Digest {
		t.Fatalf("sessions: %+v %v, want s-a with digest %s", ss, err, read.Digest)
	}
	claim := Session{ID: "s-a", User: "u", Title: "t", Node: "n", Manager: "mgr-b"}
	if ok, err := r.PutSessionHeldBy(ctx, claim, read.Digest, "mgr-b"); !ok || err != nil {
		t.Fatalf("claim over the entry unchanged: %v %v, want written", ok, err)
	}
	put("s-a", "mgr-a") // mgr-a writes it again, the same
	if ok, err := r.PutSessionHeldBy(ctx, claim, read.Digest, "mgr-b"); !ok || err != nil {
		t.Fatalf("claim over the entry written the same: %v %v, want written", ok, err)
	}
	// mgr-a rewrites it (its node registered there again): changed.
	if err := r.PutSession(ctx, Session{ID: "s-a", User: "u", Title: "t", Node: "n", State: StatePlaying, Manager: "mgr-a"}); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.PutSessionHeldBy(ctx, claim, read.Digest, "mgr-b"); ok || err != nil {
		t.Fatalf("claim over the entry rewritten: %v %v, want not written", ok, err)
	}
	if ok, err := r.DeleteSessionHeldBy(ctx, "s-a", read.Digest, "mgr-b"); ok || err != nil {
		t.Fatalf("delete of the entry rewritten: %v %v, want not deleted", ok, err)
	}
	got, err := r.Session(ctx, "s-a")
	if err != nil || got.State != StatePlaying || got.Manager != "mgr-a" || got.Digest == read.Digest {
		t.Fatalf("s-a after the refused calls: %+v %v, want mgr-a's rewrite kept, with another digest", got, err)
	}
	if ok, err := r.DeleteSessionHeldBy(ctx, "s-a", got.Digest); !ok || err != nil {
		t.Fatalf("delete of the entry as read again, no manager named: %v %v, want deleted", ok, err)
	}
	if ok, err := r.PutSessionHeldBy(ctx, claim, got.Digest, "mgr-a"); ok || err != nil {
		t.Fatalf("claim over the deleted entry: %v %v, want not written", ok, err)
	}
}

// TestRedisHeldByEntryOfNoSession: a compare-and-set or -delete of a
// session whose stored entry is JSON but not that session's (an empty
// object or array, another id's) fails with ErrUndecodable, as Session
// and Sessions take it, and leaves it as is. The script took such an
// entry as one of no manager (or of the manager it named) and wrote over
// it or deleted it.
func TestRedisHeldByEntryOfNoSession(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	r := openRedis(t, RedisOptions{Addr: srv.Addr})
	raw := srv.Client(t)
	bad := map[string]string{"s-object": `{}`, "s-array": `[]`, "s-other": `{"id":"s-elsewhere","manager":"mgr-a"}`}
	for id, v := range bad {
		if err := raw.HSet(ctx, r.key(redisSessions), id, v).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Session(ctx, id); !errors.Is(err, ErrUndecodable) {
			t.Fatalf("session %s read: %v, want ErrUndecodable", id, err)
		}
	}
	for id, v := range bad {
		if ok, err := r.PutSessionHeldBy(ctx, Session{ID: id, Manager: "mgr-a"}, "", "mgr-a", ""); ok || !errors.Is(err, ErrUndecodable) {
			t.Errorf("put over %s: %v %v, want ErrUndecodable", id, ok, err)
		}
		if ok, err := r.DeleteSessionHeldBy(ctx, id, "", "mgr-a", ""); ok || !errors.Is(err, ErrUndecodable) {
			t.Errorf("delete of %s: %v %v, want ErrUndecodable", id, ok, err)
		}
		if got, err := raw.HGet(ctx, r.key(redisSessions), id).Result(); err != nil || got != v {
			t.Errorf("entry %s after the calls: %q %v, want %q kept", id, got, err, v)
		}
	}
}
