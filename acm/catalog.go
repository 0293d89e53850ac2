package acm

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// titles returns the current catalog (read only).
func (m *Manager) titles() map[string]store.Title { return *m.catalog.Load() }

func (m *Manager) setCatalog(ts []store.Title) {
	c := make(map[string]store.Title, len(ts))
	for _, t := range ts {
		c[t.ID] = t
	}
	sorted := make([]store.Title, 0, len(c))
	for _, t := range c {
		sorted = append(sorted, t)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	m.catalog.Store(&c)
	m.catalogSorted.Store(&sorted)
	m.catalogGen.Add(1)
}

// catalogKickMin is the least time between two reads of the catalog that
// a node's report asked for (kickCatalog).
const catalogKickMin = time.Second

// kickCatalog asks catalogLoop to read the catalog again now.
func (m *Manager) kickCatalog() {
	select {
	case m.catalogKick <- struct{}{}:
	default:
	}
}

// sortedTitles returns the catalog in id order (read only).
func (m *Manager) sortedTitles() []store.Title { return *m.catalogSorted.Load() }

// catalogLoop refreshes the catalog from the origin every CatalogRefresh,
// and when kicked (kickCatalog: at most once per catalogKickMin); after a
// failure it retries sooner, backing off from 1 s up to the refresh
// interval, and warns once per outage (at debug level after that).
func (m *Manager) catalogLoop() {
	backoff := time.Second
	wait := m.CatalogRefresh
	if len(m.titles()) == 0 {
		wait = backoff
	}
	last := time.Now()         // Start read it
	var failingSince time.Time // the first failure of the present outage
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-time.After(wait):
		case <-m.catalogKick:
			if d := catalogKickMin - time.Since(last); d > 0 {
				select {
				case <-m.ctx.Done():
					return
				case <-time.After(d):
				}
			}
		}
		last = time.Now()
		if err := m.refreshCatalog(m.ctx, 10*time.Second); err != nil {
			if failingSince.IsZero() { // one warning per outage
				failingSince = last
				m.log.Warn("catalog: refresh failed, retrying", withOriginHint(err, "origin", m.OriginAddr, "err", err, "retry_in", backoff)...)
			} else {
				m.log.Debug("catalog: refresh failed again", "origin", m.OriginAddr, "err", err, "retry_in", backoff)
			}
			wait, backoff = backoff, min(backoff*2, m.CatalogRefresh)
			continue
		}
		if !failingSince.IsZero() {
			m.log.Info("catalog: refresh works again", "origin", m.OriginAddr, "failed_for", time.Since(failingSince).Round(time.Second))
			failingSince = time.Time{}
		}
		wait, backoff = m.CatalogRefresh, time.Second
	}
}

// refreshCatalog loads the catalog from the origin (a page at a time:
// pb.ListAllTitles), stores it and serves
// it, and feeds new popularity hints to the storage manager. Titles with
// a malformed id or no bitrate are skipped, a malformed hint is dropped
// (logged).
func (m *Manager) refreshCatalog(ctx context.Context, timeout time.Duration) error {
	_, err := m.readCatalog(ctx, timeout, false)
	return err
}

// readCatalog is refreshCatalog, returning how the catalog changed
// (catalogChange); one read at a time (catalogMu). With check (an
// operator's refresh) it asks the origin to look at its title directory
// first (ListTitlesRequest.check_directory), so that a change made there
// since its last poll is in the read. A refusal of the origin's directory
// (catalog_refused) is logged as a warning when it is new or check is set,
// and its end at info.
func (m *Manager) readCatalog(ctx context.Context, timeout time.Duration, check bool) (catalogChange, error) {
	m.catalogMu.Lock()
	defer m.catalogMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var first *pb.ListTitlesResponse // the origin's answer to the first page, asked to check
	list := pb.NewOriginClient(m.origin).ListTitles
	titles, err := pb.ListAllTitles(ctx, func(ctx context.Context, req *pb.ListTitlesRequest, opts ...grpc.CallOption) (*pb.ListTitlesResponse, error) {
		if first == nil {
			req.CheckDirectory = check
		}
		r, err := list(ctx, req, opts...)
		if first == nil && err == nil {
			first = r
		}
		return r, err
	})
	if err != nil {
		return catalogChange{}, err
	}
	refused := first.GetCatalogRefused()
	switch {
	case refused != "" && (refused != m.originRefused || check):
		m.log.Warn("catalog: the origin refused its changed catalog: it serves the titles it loaded before (fix its title directory: the origin reads it again when it changes)",
			"origin", m.OriginAddr, "origin_err", refused)
	case refused == "" && m.originRefused != "":
		m.log.Info("catalog: the origin serves its title directory again (its refusal is over)", "origin", m.OriginAddr)
	}
	m.originRefused = refused
	if first.GetDirectoryChanging() {
		m.log.Warn("catalog: the origin's title directory is still changing (a copy in progress?): the change is not loaded, not in this read; refresh again once copies are over",
			"origin", m.OriginAddr)
	}
	ts := make([]store.Title, 0, len(titles))
	seen := make(map[string]bool, len(titles))
	for _, t := range titles {
		if !idPattern.MatchString(t.GetId()) || t.GetBitrateBps() <= 0 || seen[t.GetId()] {
			m.log.Warn("catalog: title skipped (bad id, no bitrate or duplicate)", "title", t.GetId(), "bitrate_bps", t.GetBitrateBps())
			continue
		}
		seen[t.GetId()] = true
		pop := t.GetPopularityPerDay()
		if !(pop >= 0) || math.IsInf(pop, 0) {
			m.log.Warn("catalog: popularity hint ignored (want expected requests per day >= 0)", "title", t.GetId(), "popularity_per_day", pop)
			pop = 0
		}
		ts = append(ts, store.Title{ID: t.GetId(), Name: t.GetName(), DurationS: t.GetDurationS(),
			BitrateBps: t.GetBitrateBps(), SizeBytes: t.GetSizeBytes(), Package: t.GetPackage(), PopularityPerDay: pop,
			Version: t.GetVersion()})
	}
	change := m.logCatalogChange(ts)
	change.originRefused, change.originChecked, change.originChanging = refused, first.GetDirectoryChecked(), first.GetDirectoryChanging()
	before := m.catalogGen.Load()
	// The read's time before its catalog and catalogLoaded: ListTitles,
	// reading them the other way round, never sees this catalog (or
	// has_catalog from it) with a read time of 0.
	m.health.catalogReadMs.Store(time.Now().UnixMilli())
	m.setCatalog(ts)
	m.checkPackages(ts)
	if len(change.replaced) > 0 {
		m.mu.Lock()
		m.markReplacedLocked(change.replaced, before)
		m.mu.Unlock()
	}
	m.health.catalogLoaded.Store(true)
	m.applyHints()
	err = m.st.ReplaceTitles(ctx, ts)
	m.noteStoreWrite(err)
	if err != nil {
		return change, err // the store says "store: …"
	}
	m.log.Debug("catalog refreshed", "titles", len(ts))
	return change, nil
}

// catalogChange is how a read of the origin's catalog changed the
// manager's: the ids (sorted) of the titles published, withdrawn and
// replaced (another version or size) since the previous read; and what
// the origin said of its title directory: the error with which it refused
// the directory's last change ("" none: ListTitlesResponse.catalog_refused)
// and whether it looked at it before answering (directory_checked).
type catalogChange struct {
	published, withdrawn, replaced []string
	originRefused                  string
	originChecked                  bool
	originChanging                 bool // the origin's directory_changing: its change not loaded yet
}

// logCatalogChange logs, before ts replaces it, how the catalog changed:
// titles published, withdrawn and replaced (another version), with up to
// five ids of each, and returns the change. The first catalog loaded is
// logged with its size (no change returned).
func (m *Manager) logCatalogChange(ts []store.Title) catalogChange {
	old := m.titles()
	if len(old) == 0 {
		m.log.Info("catalog loaded", "titles", len(ts))
		return catalogChange{}
	}
	var c catalogChange
	seen := make(map[string]bool, len(ts))
	for _, t := range ts {
		seen[t.ID] = true
		switch o, ok := old[t.ID]; {
		case !ok:
			c.published = append(c.published, t.ID)
		case (o.Version != "" && o.Version != t.Version) || o.SizeBytes != t.SizeBytes:
			c.replaced = append(c.replaced, t.ID)
		}
	}
	for id := range old {
		if !seen[id] {
			c.withdrawn = append(c.withdrawn, id)
		}
	}
	for _, ids := range [][]string{c.published, c.withdrawn, c.replaced} {
		slices.Sort(ids)
	}
	if len(c.published)+len(c.replaced)+len(c.withdrawn) == 0 {
		return c
	}
	some := func(ids []string) string {
		if len(ids) > 5 {
			return strings.Join(ids[:5], ",") + ",..."
		}
		return strings.Join(ids, ",")
	}
	m.log.Info("catalog changed at the origin", "titles", len(ts),
		"published", len(c.published), "withdrawn", len(c.withdrawn), "replaced", len(c.replaced),
		"published_ids", some(c.published), "withdrawn_ids", some(c.withdrawn), "replaced_ids", some(c.replaced))
	return c
}

func titleProto(t store.Title) *pb.Title {
	return &pb.Title{Id: t.ID, Name: t.Name, DurationS: t.DurationS, BitrateBps: t.BitrateBps, SizeBytes: t.SizeBytes,
		Package: t.Package, PopularityPerDay: t.PopularityPerDay, Version: t.Version}
}
