package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
)

func TestReopen(t *testing.T) {
	data := sample(t)
	s, err := Open(Config{Dir: t.TempDir(), Origin: startOrigin(t, &origin{titles: map[string][]byte{"t1": data}})})
	if err != nil {
		t.Fatal(err)
	}
	tt, err := s.Acquire(context.Background(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	early, err := tt.Reopen() // most likely while the fill writes the .part file
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	waitComplete(t, tt) // renamed to t1.ts
	late, err := tt.Reopen()
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	// each has an offset of its own: reading one moves neither the other
	// nor the title's reads
	if _, err := late.Seek(188, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]io.Reader{"early": early, "late": io.MultiReader(bytes.NewReader(data[:188]), late)} {
		if b, err := io.ReadAll(f); err != nil || !bytes.Equal(b, data) {
			t.Errorf("%s: %d bytes (%v), want the title's %d", name, len(b), err, len(data))
		}
	}
	p := make([]byte, 188)
	if n, err := tt.ReadAt(p, 0); n != 188 || err != nil || !bytes.Equal(p, data[:188]) {
		t.Errorf("title's ReadAt: %d %v", n, err)
	}
	s.Release(tt)
	s.Close()
	if f, err := tt.Reopen(); !errors.Is(err, ErrClosed) {
		if err == nil {
			f.Close()
		}
		t.Errorf("reopening the file of a closed store: %v, want ErrClosed", err)
	}
	if _, err := tt.ReadAt(p, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("reading the file of a closed store: %v, want ErrClosed", err)
	}
}
