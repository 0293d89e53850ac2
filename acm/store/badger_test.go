package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestBadgerSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := OpenBadger(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_800_000_000, 0).UTC()
	s1 := Session{ID: "a1", User: "demo", Title: "t1", Node: "n1", ClientAddr: "127.0.0.1", BitrateBps: 600_000,
		State: StateAdmitted, Protocol: ProtoRTSP, AdmittedAt: at}
	s2 := s1
	s2.ID, s2.State, s2.StartedAt = "b2", StatePlaying, at.Add(time.Second)
	for _, s := range []Session{s1, s2} {
		if err := b.PutSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	titles := []Title{{ID: "t1", BitrateBps: 1, SizeBytes: 188, Package: "p"}, {ID: "t2", BitrateBps: 2, DurationS: 2.5}}
	if err := b.ReplaceTitles(ctx, titles); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteSession(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.PutSession(ctx, s1); !errors.Is(err, ErrClosed) {
		t.Fatalf("put after close: %v", err)
	}

	b, err = OpenBadger(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ss, err := b.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 || ss[0] != s2 {
		t.Fatalf("sessions after reopen: %+v", ss)
	}
	if _, err := b.Session(ctx, "a1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted session: %v", err)
	}
	got, err := b.Session(ctx, "b2")
	if err != nil || got != s2 {
		t.Fatalf("session b2: %+v %v", got, err)
	}
	tt, err := b.Titles(ctx)
	if err != nil || len(tt) != 2 || tt[0] != titles[0] || tt[1] != titles[1] {
		t.Fatalf("titles after reopen: %+v %v", tt, err)
	}
}

func TestBadgerReplaceTitlesRemovesMissing(t *testing.T) {
	ctx := context.Background()
	b, err := OpenBadger(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var many []Title
	for i := range 3000 {
		many = append(many, Title{ID: fmt.Sprintf("title-%05d", i), BitrateBps: int64(i + 1), Package: "p"})
	}
	if err := b.ReplaceTitles(ctx, many); err != nil {
		t.Fatal(err)
	}
	next := []Title{{ID: "title-00007", BitrateBps: 99}, {ID: "zz", BitrateBps: 1}}
	if err := b.ReplaceTitles(ctx, next); err != nil {
		t.Fatal(err)
	}
	tt, err := b.Titles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tt) != 2 || tt[0] != next[0] || tt[1] != next[1] {
		t.Fatalf("titles: %+v", tt)
	}
	if err := b.ReplaceTitles(ctx, []Title{{}}); err == nil {
		t.Fatal("title without id accepted")
	}
	if err := b.PutSession(ctx, Session{}); err == nil {
		t.Fatal("session without id accepted")
	}
}

func TestOpenBadgerLockedDir(t *testing.T) {
	dir := t.TempDir()
	b, err := OpenBadger(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b2, err := OpenBadger(dir, nil); err == nil {
		b2.Close()
		t.Fatal("second open of a locked directory succeeded")
	}
	if _, err := OpenBadger("", nil); err == nil {
		t.Fatal("empty dir accepted")
	}
}
