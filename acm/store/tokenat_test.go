package store

import (
	"context"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// TestSessionWithoutTokenAt: a session written before sessions carried
// token_at (the newest token of a viewer who asked the front door again)
// still reads, with TokenAt zero (its no-show counts from admitted_at),
// and a session with it keeps it to the millisecond and more.
func TestSessionWithoutTokenAt(t *testing.T) {
	const old = `{"id":"old1","user":"demo","title":"t1","node":"n1","client_addr":"127.0.0.1","bitrate_bps":600000,"fill":false,"state":"admitted","protocol":"http","admitted_at":"2027-01-15T08:00:00Z"}`
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.open(t)
		switch st := s.(type) {
		case *Badger:
			if err := st.db.Update(func(txn *badger.Txn) error { return txn.Set(key(prefixSession, "old1"), []byte(old)) }); err != nil {
				t.Fatal(err)
			}
		case *Redis:
			if err := st.c.HSet(ctx, st.key(redisSessions), "old1", old).Err(); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("store %T", s)
		}
		got, err := s.Session(ctx, "old1")
		if err != nil {
			t.Fatal(err)
		}
		if admitted := time.Date(2027, 1, 15, 8, 0, 0, 0, time.UTC); !got.TokenAt.IsZero() || !got.AdmittedAt.Equal(admitted) {
			t.Fatalf("old record read as %+v: want TokenAt zero and its admitted_at", got)
		}
		renewed := got
		renewed.TokenAt = got.AdmittedAt.Add(12345678901 * time.Nanosecond) // 12.345678901 s later
		if err := s.PutSession(ctx, renewed); err != nil {
			t.Fatal(err)
		}
		s = b.reopen(t, s)
		ss, _, err := s.Sessions(ctx)
		if err != nil || len(ss) != 1 {
			t.Fatalf("sessions after reopen: %+v %v", ss, err)
		}
		if !ss[0].TokenAt.Equal(renewed.TokenAt) || !ss[0].AdmittedAt.Equal(got.AdmittedAt) {
			t.Fatalf("token_at %v, admitted_at %v after reopen; want %v, %v", ss[0].TokenAt, ss[0].AdmittedAt, renewed.TokenAt, got.AdmittedAt)
		}
	})
}
