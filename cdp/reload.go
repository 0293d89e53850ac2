package cdp

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
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
// none, of its *.ts files (the titles of a directory without a catalog).
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
		if strings.HasSuffix(de.Name(), ".ts") && !de.IsDir() {
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
// SIGHUP; the watch started by Start calls it when the directory changed)
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
		_ = s.Reload() // logged; the catalog before stays in use
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

// checkDirectory looks at the title directory now and, when it changed
// since the catalog was last loaded or refused, loads it (Reload: logged,
// the catalog before kept when refused), without waiting for the watch's
// next poll nor for the change to hold still one more look: an operator
// who asks (vodctl titles --refresh) has finished the change. It returns
// once the load is over; errNotStarted before Start or after Close.
func (s *Server) checkDirectory() error {
	if _, changed := s.dirChanged(); !changed {
		return nil
	}
	if err := s.Reload(); errors.Is(err, errNotStarted) {
		return err
	}
	return nil // a refusal: the answer says it (catalog_refused)
}

// dirChanged returns the state of the title directory now and whether it
// differs from the one last loaded or refused.
func (s *Server) dirChanged() (dirState, bool) {
	s.reloadMu.Lock()
	seen, watched := s.seen, s.watched
	s.reloadMu.Unlock()
	cur := listState(s.Dir)
	cur.stat(watched)
	return cur, !cur.equal(seen)
}
