package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/connectivity"
)

// A title's file changed at the origin while the origin runs (its catalog,
// read at start, still gives the old size and version; here it never
// reads it again by itself): the origin answers UNAVAILABLE, saying so,
// when the node asks for the title (GetTitle) and to each fetch naming
// the old version, so a fill resuming the partial from the cached entry
// gets no byte and fails as the origin's (its retries spent), the partial
// kept untouched: nothing joins the new file's bytes to the partial's,
// until the origin reads its catalog again (restarted), which then fills
// the new file whole, the partial of the old one gone.
func TestPartialNotJoinedToAFileChangedUnderTheOrigin(t *testing.T) {
	data := sample(t)
	for _, c := range []struct {
		name  string
		write func(path string, b []byte) error
	}{
		{"rewritten in place", func(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }},
		{"renamed over", func(path string, b []byte) error {
			if err := os.WriteFile(path+".new", b, 0o644); err != nil {
				return err
			}
			return os.Rename(path+".new", path)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := newCDPOrigin(t, map[string][]byte{"t1": data})
			o.start(8_000_000)
			clk := newTestClock()
			s := openCutStore(t, o, clk, 300*time.Millisecond)
			p := cutFill(t, s, o, "t1", 300<<10)
			o.poll = -1
			o.start(0)
			o.ready()
			// The new file: as long, other bytes before and after the
			// partial's end, written after the origin's scan of the old.
			next := append([]byte(nil), data...)
			next[188*100+187] ^= 0xff
			next[p.Stored+188*10+187] ^= 0xff
			if err := c.write(filepath.Join(o.dir, "t1.ts"), next); err != nil {
				t.Fatal(err)
			}
			clk.add(2 * catalogMinRefresh)
			ctx := context.Background()
			for range 2 { // until the origin reads its catalog again
				err := fillEnded(t, s, "t1")
				if FailCause(err) != "origin" || !strings.Contains(err.Error(), "changed since the origin loaded its catalog") {
					t.Fatalf("a fill of a file changed under the running origin: %v, want it failed as the origin's, saying so", err)
				}
			}
			if ps := s.Partials(); len(ps) != 1 || ps[0].Stored != p.Stored {
				t.Errorf("partials after the refusals: %+v, want the one kept (%d bytes), untouched", ps, p.Stored)
			}
			if len(s.Titles()) != 0 {
				t.Errorf("titles after the refusals: %+v", s.Titles())
			}

			// After, the new file is filled from its first byte.
			o.stop()
			// the node's connection sees the origin go before it comes back
			// (else its catalog read may meet the old connection's end)
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if o.cc.GetState() == connectivity.Ready && !o.cc.WaitForStateChange(wctx, connectivity.Ready) {
				t.Fatal("the node's connection stayed ready after the origin stopped")
			}
			cancel()
			o.start(0)
			o.ready()
			clk.add(2 * catalogMinRefresh)
			tt, err := s.Acquire(ctx, "t1")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Release(tt)
			waitComplete(t, tt)
			checkWhole(t, s, tt, next)
			if ps := s.Partials(); len(ps) != 0 {
				t.Errorf("partials after the new file's fill: %+v", ps)
			}
		})
	}
}
