package store

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// TestBadgerStateSurvivesReopen: named state is kept across a reopen, a
// missing name is ErrNotFound, a malformed name is refused, a value
// written is not aliased, and state never shows up as a session or title.
func TestBadgerStateSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := OpenBadger(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := []byte(`[{"title":"t1"}]`)
	if err := b.PutState(ctx, "pins", v); err != nil {
		t.Fatal(err)
	}
	v[0] = 'X' // the caller's buffer is not the stored value
	if err := b.PutState(ctx, "popularity", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "Pins", "a/b", "with space", string(make([]byte, 65))} {
		if err := b.PutState(ctx, bad, nil); err == nil {
			t.Errorf("state name %q accepted", bad)
		}
	}
	if _, err := b.State(ctx, "nothing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing state: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.State(ctx, "pins"); !errors.Is(err, ErrClosed) {
		t.Fatalf("state after close: %v", err)
	}
	if err := b.PutState(ctx, "pins", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("put state after close: %v", err)
	}

	b, err = OpenBadger(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, err := b.State(ctx, "pins")
	if err != nil || !bytes.Equal(got, []byte(`[{"title":"t1"}]`)) {
		t.Fatalf("pins after reopen: %q %v", got, err)
	}
	if err := b.PutState(ctx, "pins", []byte("[]")); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.State(ctx, "pins"); string(got) != "[]" {
		t.Fatalf("replaced pins: %q", got)
	}
	ss, _ := b.Sessions(ctx)
	ts, _ := b.Titles(ctx)
	if len(ss) != 0 || len(ts) != 0 {
		t.Fatalf("state leaked into sessions %v or titles %v", ss, ts)
	}
}
