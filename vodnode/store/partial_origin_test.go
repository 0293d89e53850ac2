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
// read at start, still gives the old size and version): a resume naming
// that version is refused instead of joining the new file's bytes to the
// partial's (a copy that is neither file, complete for good), the partial
// goes, and no fill of the title completes until the origin reads its
// catalog again (restarted), which then fills the new file whole.
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
			tt, err := s.Acquire(ctx, "t1")
			if err != nil {
				t.Fatal(err)
			}
			err = waitEnded(t, tt)
			s.Release(tt)
			s.fills.Wait()
			if err == nil || !strings.Contains(err.Error(), "changed since the origin loaded its catalog") {
				got, _ := os.ReadFile(s.path("t1", ".ts"))
				t.Fatalf("resume from a file changed under the running origin: %v (stored %d bytes; the old file's: %v, the new one's: %v)",
					err, len(got), string(got) == string(data), string(got) == string(next))
			}
			if ps := s.Partials(); len(ps) != 0 {
				t.Errorf("partials after the refused resume: %+v", ps)
			}
			if len(s.Titles()) != 0 {
				t.Errorf("titles after the refused resume: %+v", s.Titles())
			}

			// Until the origin reads its catalog again, no fill completes;
			// after, the new file is filled from its first byte.
			tt, err = s.Acquire(ctx, "t1")
			if err != nil {
				t.Fatal(err)
			}
			if err := waitEnded(t, tt); err == nil {
				t.Fatal("a fill of a file changed under the running origin completed")
			}
			s.Release(tt)
			s.fills.Wait()
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
			if tt, err = s.Acquire(ctx, "t1"); err != nil {
				t.Fatal(err)
			}
			defer s.Release(tt)
			waitComplete(t, tt)
			checkWhole(t, s, tt, next)
		})
	}
}
