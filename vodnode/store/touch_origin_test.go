package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// touchMidFill fills t1 (data) from a real origin that reads its directory
// again soon after a change (CatalogPoll 100 ms), paced so that the fill
// takes seconds, and, once at least 200 KiB are on the node's disk, calls
// change on the title's file at the origin. It returns the store, the
// origin and the fill's title, still acquired.
func touchMidFill(t *testing.T, data []byte, change func(path string) error) (*Store, *cdpOrigin, *Title) {
	t.Helper()
	o := newCDPOrigin(t, map[string][]byte{"t1": data})
	o.poll = 100 * time.Millisecond
	o.start(4_000_000)
	s := openCutStore(t, o, nil, 5*time.Second)
	tt, err := s.Acquire(t.Context(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Release(tt) })
	waitView(t, tt, 10*time.Second, "the first bytes", func(v *View) bool { return v.Index.Size >= 200<<10 })
	if err := change(filepath.Join(o.dir, "t1.ts")); err != nil {
		t.Fatal(err)
	}
	return s, o, tt
}

// A title's file touched at the origin during a fill (its bytes the same:
// a backup restored, a cp of the same file over it) is no new version:
// the origin ends the transfer (UNAVAILABLE: it cannot vouch for the bytes
// until it has read the file again), the node retries from the offset
// reached, and once the origin has read the file, of the same version, the
// fill completes with the same bytes, nothing failed as replaced.
func TestFillSurvivesATouchAtTheOrigin(t *testing.T) {
	data := sample(t)
	touch := func(path string) error {
		later := time.Now().Add(time.Second)
		return os.Chtimes(path, later, later)
	}
	s, o, tt := touchMidFill(t, data, touch)
	if err := waitEnded(t, tt); err != nil {
		t.Fatalf("fill of a title touched at the origin: %v", err)
	}
	checkWhole(t, s, tt, data)
	if v := tt.Meta().Version; v != version(data) {
		t.Errorf("version %s, want %s", v, version(data))
	}
	if f := s.FillsFailed(); len(f) != 0 {
		t.Errorf("fills failed: %v", f)
	}
	if n := o.srv.Stats().Transfers; n < 2 {
		t.Errorf("%d transfers: the touch did not end the first (the test proves nothing)", n)
	}
	if c, _ := o.srv.Catalog().Title("t1"); c.Version != version(data) {
		t.Errorf("origin's version after it read the touched file: %s, want %s", c.Version, version(data))
	}
}

// A title's file written over in place at the origin during a fill with
// other bytes is a new version: once the origin has read it, the fill's
// retry naming the old version is refused, the fill fails as replaced and
// keeps neither a copy nor a partial joining the two versions' bytes.
func TestFillOfAFileReplacedAtTheOriginFails(t *testing.T) {
	data := sample(t)
	next := append([]byte(nil), data...)
	next[len(next)-188*10+187] ^= 0xff // after the bytes sent before the change
	s, o, tt := touchMidFill(t, data, func(path string) error { return os.WriteFile(path, next, 0o644) })
	if err := waitEnded(t, tt); FailCause(err) != "replaced" {
		t.Fatalf("fill of a title written over at the origin: %v, want it failed as replaced", err)
	}
	s.fills.Wait()
	if ps := s.Partials(); len(ps) != 0 {
		t.Errorf("partials: %+v, want none", ps)
	}
	if _, err := os.Stat(s.path("t1", ".ts")); !os.IsNotExist(err) {
		t.Errorf("a copy kept: %v", err)
	}
	if c, _ := o.srv.Catalog().Title("t1"); c.Version != version(next) {
		t.Errorf("origin's version after it read the new file: %s, want %s", c.Version, version(next))
	}
}
