package cdp

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DefaultCatalogPoll is how often a started Server looks whether its
// title directory changed when Server.CatalogPoll is 0.
const DefaultCatalogPoll = 5 * time.Second

// dirState is what a catalog watch looks at: the stat of each path it
// watches (catalog.yaml, the *.ts files of a directory without one, the
// files the titles name), nil for a path that could not be stat'ed.
type dirState map[string]os.FileInfo

// equal reports whether d and o describe the same files, each the same
// file (not another renamed over it) of the same size, modification time
// and mode (a chmod that makes an unreadable file readable is a change:
// the load it failed is tried again).
func (d dirState) equal(o dirState) bool {
	if len(d) != len(o) {
		return false
	}
	for p, a := range d {
		b, ok := o[p]
		switch {
		case !ok, (a == nil) != (b == nil):
			return false
		case a != nil && (!sameFile(a, b) || a.Mode() != b.Mode()):
			return false
		}
	}
	return true
}

// stat adds the stat of each path to d, but for those d has already.
func (d dirState) stat(paths []string) {
	for _, p := range paths {
		if _, ok := d[p]; ok {
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			st = nil
		}
		d[p] = st
	}
}

// listState returns the state of dir's catalog.yaml and, when dir has
// none, of its *.ts files (the titles of a directory without a catalog;
// not those a copy in progress names so, dirTitleFile).
func listState(dir string) dirState {
	d := dirState{}
	doc := filepath.Join(dir, CatalogFile)
	d.stat([]string{doc}) // not dir: its modification time changes with any file made there
	if d[doc] != nil {
		return d
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return d
	}
	var ts []string
	for _, de := range des {
		if dirTitleFile(de) {
			ts = append(ts, filepath.Join(dir, de.Name()))
		}
	}
	d.stat(ts)
	return d
}

// loadDir loads the catalog of s.Dir, reusing what prev (nil at Start)
// learnt of the files that did not change, and records in s.seen and
// s.watched the state it loaded, refused or not (s.reloadMu held, or
// before Start returns). The state of each file is taken before it is
// read (the title files' as soon as the load names them, before their
// scan), so that a change during the load is seen by the next poll: a
// file replaced while the load ran is read again, not served under the
// version of the file before.
func (s *Server) loadDir(prev *Catalog) (*Catalog, int, error) {
	seen := listState(s.Dir)
	watched := s.watched
	cat, scanned, err := loadCatalog(s.Dir, prev, func(paths []string) {
		watched = paths
		seen.stat(paths)
	})
	if s.afterLoad != nil {
		s.afterLoad()
	}
	seen.stat(watched) // the load failed before naming its files: those named before
	s.seen, s.watched = seen, watched
	return cat, scanned, err
}

// Reload reads the title directory again at once (the origin calls it on
// SIGHUP; the watch started by Start and a check (ListTitles check_directory) load
// as it does when the directory changed and held still: reloadIfHeld)
// and, when it loads, serves the new catalog from then on: new titles can
// be filled, removed ones are NOT_FOUND, and a replaced file is served
// under its new version (nodes holding part of the old one start over;
// transfers in progress finish from the file they opened when the new one
// was renamed over it, and end, UNAVAILABLE, when it was written over in
// place, their retries refused FAILED_PRECONDITION once the new version is
// read: see Fetch). Only files
// that are new or changed are scanned. A catalog that does not load (a
// catalog.yaml that does not parse, a title file missing or not whole
// MPEG-TS, e.g. one still being copied) is refused with an error naming
// the file and the line, logged, and the titles loaded before stay in use.
// A catalog that loads but withdraws every title, or a catalog.yaml gone
// (the directory's *.ts files are then the titles, see LoadCatalog), is
// served and logged as a warning.
// It returns that error, or one saying the server is not started or
// closed.
func (s *Server) Reload() error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	return s.reloadLocked()
}

// reloadLocked is Reload, s.reloadMu held.
func (s *Server) reloadLocked() error {
	s.mu.Lock()
	old, ok := s.catalog, s.started && !s.closed
	s.mu.Unlock()
	if !ok {
		return errNotStarted
	}
	began := time.Now()
	doc := filepath.Join(s.Dir, CatalogFile)
	hadDoc := s.seen[doc] != nil
	cat, scanned, err := s.loadDir(old)
	if err != nil {
		s.stats.catalogLoad(err)
		s.log.Error("catalog not reloaded: the titles loaded before stay in use", "dir", s.Dir, "err", err)
		return err
	}
	s.mu.Lock()
	s.catalog = cat
	s.mu.Unlock()
	wasStale := s.stats.catalogLoad(nil)
	d := diffCatalogs(old, cat)
	level, msg := slog.LevelInfo, "catalog reloaded"
	switch {
	case wasStale:
		// The error the refusal logged is no longer the last word.
		msg = "catalog reloaded: the directory is accepted again after a refusal"
	case d == (catalogDiff{}):
		level = slog.LevelDebug // a file touched, a comment edited: nothing a viewer sees
	}
	s.log.Log(context.Background(), level, msg, "dir", s.Dir, "titles", cat.Len(), "added", d.added, "removed", d.removed,
		"replaced", d.replaced, "changed", d.changed, "files_scanned", scanned,
		"wall", time.Since(began).Round(time.Millisecond))
	switch {
	case hadDoc && s.seen[doc] == nil:
		s.log.Warn("catalog.yaml is gone: the titles are now the directory's *.ts files, in package "+DefaultPackage+"; put it back to serve its titles again",
			"dir", s.Dir, "titles", cat.Len(), "removed", d.removed)
	case cat.Len() == 0 && old.Len() > 0:
		s.log.Warn("catalog is empty: every title withdrawn", "dir", s.Dir, "removed", d.removed)
	}
	return nil
}

// catalogDiff counts the titles two catalogs do not share.
type catalogDiff struct {
	added, removed int
	replaced       int // same id, another version
	changed        int // same id and version, other metadata (name, package, popularity)
}

func diffCatalogs(old, cur *Catalog) catalogDiff {
	var d catalogDiff
	for _, t := range cur.titles {
		o, ok := old.Title(t.ID)
		switch {
		case !ok:
			d.added++
		case o.Version != t.Version:
			d.replaced++
		case o.Name != t.Name || o.Package != t.Package || o.PopularityPerDay != t.PopularityPerDay:
			d.changed++
		}
	}
	for _, o := range old.titles {
		if _, ok := cur.Title(o.ID); !ok {
			d.removed++
		}
	}
	return d
}

// watch polls the title directory every interval until done is closed and
// reloads the catalog when it changed since the last load and has stayed
// the same for one more interval (a file still being copied changes at
// every poll: it is read once the copy is over). A fetch that finds a
// title's file changed wakes it at once (rescanSoon): that poll counts as
// the first of the two, the second comes an interval after it.
func (s *Server) watch(interval time.Duration, done <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var last dirState // the previous poll's state, when it differed from the loaded one
	for {
		kicked := false
		select {
		case <-done:
			return
		case <-t.C:
		case <-s.rescan:
			kicked = true
		}
		cur, changed := s.dirChanged()
		if !changed {
			last = nil
			continue
		}
		if last == nil || !cur.equal(last) {
			last = cur
			if kicked {
				// The change a fetch found is seen now: it is read one
				// interval from now if it stays so.
				t.Reset(interval)
			}
			continue
		}
		if kicked {
			// The same since the last poll, which may be less than an
			// interval ago: the next poll reads it.
			continue
		}
		last = nil
		_, _, _ = s.reloadIfHeld(cur) // logged; the catalog before stays in use; changed again: the next polls read it
	}
}

// rescanOn returns err, the answer of Title.checkFile; when it says the
// title's file changed since the catalog's load (UNAVAILABLE), it has the
// watch look at the title directory at once (rescanSoon): the file is read
// again, and its version known, about one CatalogPoll after, not up to
// two.
func (s *Server) rescanOn(err error) error {
	if status.Code(err) == codes.Unavailable {
		s.rescanSoon()
	}
	return err
}

// rescanSoon wakes the watch started by Start to look at the title
// directory now rather than at its next poll, so that a change it finds
// is read one CatalogPoll later (it must stay the same for that long: a
// file still being copied is not read). It never blocks, and does nothing
// when no watch runs (a negative CatalogPoll: only Reload, or SIGHUP,
// reads the directory again).
func (s *Server) rescanSoon() {
	select {
	case s.rescan <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// DefaultCheckSettle is how long a check of the title directory
// (checkDirectory) that found a change waits for it to hold still before
// it loads it, unless the server's CatalogPoll is shorter; it looks again
// up to maxSettles times while the directory keeps changing.
const DefaultCheckSettle = time.Second

// maxSettles bounds the looks of a check at a directory that keeps
// changing (5 s at DefaultCheckSettle): it then answers that the
// directory is still changing, not loaded.
const maxSettles = 5

// checkDirectory looks at the title directory now and, when it changed
// since the catalog was last loaded or refused, loads it (Reload: logged,
// the catalog before kept when refused) once it has held still for the
// settle interval (checkSettle: a file still being copied is not read
// half-way), without waiting for the watch's next poll. It returns once
// the load is over, with changing true when the directory kept changing
// for maxSettles looks (nothing loaded). Concurrent checks share one run:
// a check that arrives during another waits for it and answers its
// result. It returns the caller's ctx error (as a gRPC status) when ctx
// is done first, errNotStarted before Start or after Close.
func (s *Server) checkDirectory(ctx context.Context) (changing bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, status.FromContextError(err).Err()
	}
	ch := s.checks.DoChan("check", func() (any, error) { return s.runCheck() })
	if s.checkJoined != nil {
		s.checkJoined()
	}
	select {
	case <-ctx.Done():
		return false, status.FromContextError(ctx.Err()).Err()
	case r := <-ch:
		if r.Err != nil {
			return false, r.Err
		}
		return r.Val.(bool), nil
	}
}

// runCheck is one run of checkDirectory, shared by the checks that
// arrive while it runs; it returns whether the directory kept changing.
func (s *Server) runCheck() (bool, error) {
	s.checkRuns.Add(1)
	cur, changed := s.dirChanged()
	if !changed {
		return false, nil
	}
	s.mu.Lock()
	done, ok := s.watchDone, s.started && !s.closed
	s.mu.Unlock()
	if !ok {
		return false, errNotStarted
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-done: // Close: stop waiting
			cancel()
		case <-ctx.Done():
		}
	}()
	for range maxSettles {
		if err := s.clk.Sleep(ctx, s.settleInterval()); err != nil {
			return false, errNotStarted
		}
		if s.afterSettle != nil {
			s.afterSettle()
		}
		now, held, err := s.reloadIfHeld(cur)
		switch {
		case errors.Is(err, errNotStarted):
			return false, err
		case held:
			return false, nil // loaded, or refused: the answer says it (catalog_refused)
		}
		cur = now
	}
	s.log.Warn("catalog not reloaded: the title directory is still changing (a copy in progress?); it is loaded once it holds still",
		"dir", s.Dir, "looked_for", time.Duration(maxSettles)*s.settleInterval())
	return true, nil
}

// settleInterval is how long a check waits for a change to hold still:
// checkSettle when set (tests), else DefaultCheckSettle or the
// CatalogPoll when shorter.
func (s *Server) settleInterval() time.Duration {
	if s.checkSettle > 0 {
		return s.checkSettle
	}
	if poll := s.CatalogPoll; poll > 0 && poll < DefaultCheckSettle {
		return poll
	}
	return DefaultCheckSettle
}

// reloadIfHeld loads the title directory (as Reload does) when its state
// now differs from the one last loaded or refused and is held, the state
// an earlier look found: it held still since. It looks under reloadMu, so
// that a check and the watch that found the same change load it once
// (the second finds it loaded). It returns the state now and whether it
// was held (or nothing is left to load); false: it changed again, nothing
// loaded.
func (s *Server) reloadIfHeld(held dirState) (dirState, bool, error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	cur := s.stateNow(s.watched)
	switch {
	case cur.equal(s.seen):
		return cur, true, nil // loaded (or refused) by another look meanwhile
	case !cur.equal(held):
		return cur, false, nil
	}
	return cur, true, s.reloadLocked()
}

// dirChanged returns the state of the title directory now and whether it
// differs from the one last loaded or refused.
func (s *Server) dirChanged() (dirState, bool) {
	s.reloadMu.Lock()
	seen, watched := s.seen, s.watched
	s.reloadMu.Unlock()
	cur := s.stateNow(watched)
	return cur, !cur.equal(seen)
}

// stateNow returns the state of the title directory now: listState, the
// files watched (those the last load named) and those its catalog.yaml
// names now when it parses, so that a title's file still being copied
// after catalog.yaml was written to name it is seen changing (the load
// would name it, and record its state, too).
func (s *Server) stateNow(watched []string) dirState {
	cur := listState(s.Dir)
	cur.stat(watched)
	doc := filepath.Join(s.Dir, CatalogFile)
	if cur[doc] == nil {
		return cur
	}
	if paths, ok := s.named.get(cur[doc]); ok {
		cur.stat(paths)
		return cur
	}
	data, err := os.ReadFile(doc)
	if err != nil {
		return cur
	}
	entries, err := parseCatalog(data, s.Dir)
	if err != nil {
		return cur // the load refuses it, naming the line
	}
	paths := make([]string, len(entries))
	for i, e := range entries {
		paths[i] = e.Path
	}
	s.named.put(cur[doc], paths)
	cur.stat(paths)
	return cur
}

// namedCache holds the files catalog.yaml names as stateNow last parsed
// it, with the stat it had then: the document is parsed again only when
// that stat changes (another file, size, modification time or mode), not
// at every look (a catalog of 100,000 titles parsed each
// catalog_poll_interval: BenchmarkCatalogPollNamed).
type namedCache struct {
	mu    sync.Mutex
	st    os.FileInfo
	paths []string
}

// get returns the files named by the catalog.yaml whose stat is st, when
// it is the one last parsed.
func (c *namedCache) get(st os.FileInfo) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st == nil || st == nil || !sameFile(c.st, st) || c.st.Mode() != st.Mode() {
		return nil, false
	}
	return c.paths, true
}

// put keeps paths as the files named by the catalog.yaml of stat st.
func (c *namedCache) put(st os.FileInfo, paths []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.st, c.paths = st, paths
}
