package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// rawPut stores v as it is as the entry id of hash ("sessions" or
// "titles") of s, as an operator's hand or another program might; rawDel
// removes that entry, as Skipped.Remove does; rawGet reads it.
func rawPut(t *testing.T, s Store, hash, id, v string) {
	t.Helper()
	var err error
	switch s := s.(type) {
	case *Redis:
		err = s.c.HSet(context.Background(), s.key(hash), id, v).Err()
	case *Badger:
		err = s.db.Update(func(txn *badger.Txn) error { return txn.Set(key(badgerPrefix(hash), id), []byte(v)) })
	}
	if err != nil {
		t.Fatal(err)
	}
}

func rawDel(t *testing.T, s Store, hash, id string) {
	t.Helper()
	var err error
	switch s := s.(type) {
	case *Redis:
		err = s.c.HDel(context.Background(), s.key(hash), id).Err()
	case *Badger:
		err = s.db.Update(func(txn *badger.Txn) error { return txn.Delete(key(badgerPrefix(hash), id)) })
	}
	if err != nil {
		t.Fatal(err)
	}
}

func rawGet(t *testing.T, s Store, hash, id string) string {
	t.Helper()
	var v []byte
	var err error
	switch s := s.(type) {
	case *Redis:
		v, err = s.c.HGet(context.Background(), s.key(hash), id).Bytes()
	case *Badger:
		err = s.db.View(func(txn *badger.Txn) error {
			it, err := txn.Get(key(badgerPrefix(hash), id))
			if err == nil {
				v, err = it.ValueCopy(nil)
			}
			return err
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

func badgerPrefix(hash string) []byte {
	if hash == redisTitles {
		return prefixTitle
	}
	return prefixSession
}

// TestConformanceUndecodableSessions: among good sessions, entries that
// are not a session's JSON (cut short, a number, null, another id's) are
// skipped by Sessions, which lists the others, names each skipped one
// (ErrUndecodable) and, on Redis, the HDEL that removes it; Session fails
// on one with ErrUndecodable. The entries are left as they are; once
// removed (Redis: by that very HDEL), nothing is skipped. One such entry
// failed the whole listing.
func TestConformanceUndecodableSessions(t *testing.T) {
	bad := map[string]string{
		"s-b": `{"id":"s-b","manager":`,
		"s-d": `42`,
		"s-f": `null`,
		"s-g": `{"id":"s-other","node":"n1"}`,
	}
	badIDs := []string{"s-b", "s-d", "s-f", "s-g"}
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			s := be.open(t)
			for _, id := range []string{"s-a", "s-c", "s-e"} {
				if err := s.PutSession(ctx, Session{ID: id, User: "u", Title: "t1", Node: "n1", State: StatePlaying}); err != nil {
					t.Fatal(err)
				}
			}
			for id, v := range bad {
				rawPut(t, s, redisSessions, id, v)
			}
			ss, skipped, err := s.Sessions(ctx)
			if err != nil {
				t.Fatalf("sessions: %v, want the good ones listed", err)
			}
			var ids, skippedIDs []string
			for _, x := range ss {
				ids = append(ids, x.ID)
			}
			for _, sk := range skipped {
				skippedIDs = append(skippedIDs, sk.ID)
				if !errors.Is(sk.Err, ErrUndecodable) || !strings.Contains(sk.Err.Error(), sk.ID) {
					t.Errorf("skipped %s: %v, want ErrUndecodable naming it", sk.ID, sk.Err)
				}
				want := ""
				if r, ok := s.(*Redis); ok {
					want = "HDEL " + r.key(redisSessions) + " " + sk.ID
				}
				if sk.Remove != want {
					t.Errorf("skipped %s: remove %q, want %q", sk.ID, sk.Remove, want)
				}
			}
			if !slices.Equal(ids, []string{"s-a", "s-c", "s-e"}) || !slices.Equal(skippedIDs, badIDs) {
				t.Fatalf("sessions %v, skipped %v; want s-a s-c s-e, skipped %v", ids, skippedIDs, badIDs)
			}
			for id, v := range bad {
				if _, err := s.Session(ctx, id); !errors.Is(err, ErrUndecodable) {
					t.Errorf("session %s: %v, want ErrUndecodable", id, err)
				}
				if got := rawGet(t, s, redisSessions, id); got != v {
					t.Errorf("entry %s after the listing: %q, want %q left as is", id, got, v)
				}
			}
			for _, sk := range skipped {
				if r, ok := s.(*Redis); ok {
					args := []any{}
					for _, f := range strings.Fields(sk.Remove) {
						args = append(args, f)
					}
					if n, err := r.c.Do(ctx, args...).Int(); n != 1 || err != nil {
						t.Fatalf("%s: %d %v, want the entry removed", sk.Remove, n, err)
					}
					continue
				}
				rawDel(t, s, redisSessions, sk.ID)
			}
			if ss, skipped, err := s.Sessions(ctx); err != nil || len(ss) != 3 || len(skipped) != 0 {
				t.Fatalf("sessions after the removals: %d, skipped %v, %v; want 3, none", len(ss), skipped, err)
			}
		})
	}
}

// TestConformanceUndecodableTitle: a catalog entry that is not a title's
// JSON fails Titles with ErrUndecodable naming it (and, on Redis, the
// HDEL that removes it) rather than dropping the title from the catalog
// unseen. Once it is removed, the rest is listed, and the next
// ReplaceTitles of the whole catalog writes the title again (on Redis,
// although it matches the digest of the catalog last written).
func TestConformanceUndecodableTitle(t *testing.T) {
	cat := []Title{{ID: "t1", BitrateBps: 1e6}, {ID: "t2", BitrateBps: 2e6}, {ID: "t3", BitrateBps: 3e6}}
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			s := be.open(t)
			if err := s.ReplaceTitles(ctx, cat); err != nil {
				t.Fatal(err)
			}
			for _, v := range []string{`{"id":"t2","bitrate_bps":`, `{"id":"t9"}`, `[]`} {
				rawPut(t, s, redisTitles, "t2", v)
				tt, err := s.Titles(ctx)
				if !errors.Is(err, ErrUndecodable) || !strings.Contains(err.Error(), "title t2") || tt != nil {
					t.Fatalf("titles over %s: %v %v, want ErrUndecodable naming t2", v, tt, err)
				}
				if r, ok := s.(*Redis); ok && !strings.Contains(err.Error(), "HDEL "+r.key(redisTitles)+" t2") {
					t.Fatalf("titles over %s: %v, want the HDEL that removes it", v, err)
				}
			}
			rawDel(t, s, redisTitles, "t2")
			if tt, err := s.Titles(ctx); err != nil || len(tt) != 2 {
				t.Fatalf("titles after the removal: %v %v, want t1 and t3", tt, err)
			}
			if err := s.ReplaceTitles(ctx, cat); err != nil {
				t.Fatal(err)
			}
			if tt, err := s.Titles(ctx); err != nil || len(tt) != 3 || tt[1] != cat[1] {
				t.Fatalf("titles after the next ReplaceTitles: %v %v, want %v", tt, err, cat)
			}
		})
	}
}

// TestRedisCLIArg: the ids in a Skipped.Remove are redis-cli arguments:
// plain when they can be, else double-quoted with \xHH escapes.
func TestRedisCLIArg(t *testing.T) {
	for in, want := range map[string]string{
		"0123abcdef":     "0123abcdef",
		"vodcluster:s-1": "vodcluster:s-1",
		"Test/sub:x":     "Test/sub:x",
		"":               `""`,
		"a b":            `"a b"`,
		"a\"b\\c":        `"a\"b\\c"`,
		"x\n\xffé":       `"x\x0a\xff\xc3\xa9"`,
	} {
		if got := cliArg(in); got != want {
			t.Errorf("cliArg(%q) = %s, want %s", in, got, want)
		}
	}
}
