package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/proto/grpctls"
	pb "vodcluster/proto/vodcluster/v1"
)

// catalogMinRefresh bounds how often a miss refreshes the catalog, so that
// requests for unknown titles do not hammer the origin.
const catalogMinRefresh = time.Second

// catalogMaxAge is how old the cached catalog may be when a fill starts:
// an older one is read again first, so that a title replaced at the origin
// under the same id is filled with its new size.
const catalogMaxAge = 5 * time.Minute

// catalog caches the origin's ListTitles answer. Refreshes are one at a
// time (refreshMu) and do not hold mu, so that readers of the cache never
// wait for the origin.
type catalog struct {
	origin pb.OriginClient
	log    *slog.Logger // a failed refresh is logged, with a TLS hint when that is the matter

	refreshMu sync.Mutex // one ListTitles at a time

	mu      sync.Mutex
	titles  map[string]Meta
	fetched time.Time
}

func (c *catalog) cached(id string) (Meta, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.titles[id]
	return m, ok
}

// forget drops the cached catalog's age, so that the next fill reads it
// again: the origin sent a title of another size than the cached one.
func (c *catalog) forget() {
	c.mu.Lock()
	c.fetched = time.Time{}
	c.mu.Unlock()
}

// fresh returns title id as the origin serves it now (Origin.GetTitle), and
// keeps it in the cache: a fill starts from it, so that it asks for the
// version the origin has, however old the cached catalog. A title the
// origin does not have (NOT_FOUND: withdrawn) is ErrUnknownTitle; one it
// refuses FAILED_PRECONDITION (older origins, for a file changed under
// them) is ErrOrigin. When the origin does not answer, or answers
// UNAVAILABLE (also while the title's file changed there and is not read
// again yet: the fill, naming the cached version, is retried until it is,
// then served or refused as replaced), the cached entry is used, or
// without one lookup (maxAge as there); an origin that predates GetTitle
// (UNIMPLEMENTED) is read with lookup.
func (c *catalog) fresh(ctx context.Context, id string, now time.Time, maxAge time.Duration) (Meta, error) {
	if c.origin == nil {
		return c.lookup(ctx, id, now, maxAge)
	}
	// Short: with the origin away, the cached entry does (the fill rides
	// out the outage), and a viewer's setup waits on this.
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	t, err := c.origin.GetTitle(cctx, &pb.GetTitleRequest{TitleId: id})
	cancel()
	switch status.Code(err) {
	case codes.OK:
		m := metaOf(t)
		if m.ID != id {
			return Meta{}, fmt.Errorf("%w: asked for title %q, the origin answered %q", ErrOrigin, id, m.ID)
		}
		c.mu.Lock()
		if c.titles == nil {
			c.titles = map[string]Meta{}
		}
		c.titles[id] = m
		c.mu.Unlock()
		return m, nil
	case codes.NotFound:
		c.mu.Lock()
		delete(c.titles, id)
		c.mu.Unlock()
		return Meta{}, fmt.Errorf("%w: %q", ErrUnknownTitle, id)
	case codes.FailedPrecondition:
		// An older origin's answer for a title whose file changed there:
		// no fill can start until the origin has read it again (seconds).
		return Meta{}, fmt.Errorf("%w: title %q: %v", ErrOrigin, id, status.Convert(err).Message())
	case codes.Unimplemented:
		return c.lookup(ctx, id, now, maxAge)
	}
	if m, ok := c.cached(id); ok {
		return m, nil // as good as it was: the fill rides out the origin's outage
	}
	return c.lookup(ctx, id, now, maxAge)
}

// lookup returns title id from the cache, refreshing it from the origin on
// a miss (at most once per catalogMinRefresh), and, when maxAge is not
// negative, when the cache is maxAge old or forgotten (catalogMaxAge
// before a fill, catalogMinRefresh before one resuming a partial); a
// failed refresh then falls back to the cached entry.
func (c *catalog) lookup(ctx context.Context, id string, now time.Time, maxAge time.Duration) (Meta, error) {
	c.mu.Lock()
	m, ok := c.titles[id]
	stale := maxAge >= 0 && (c.fetched.IsZero() || now.Sub(c.fetched) >= maxAge)
	c.mu.Unlock()
	if ok && !stale {
		return m, nil
	}
	if c.origin == nil {
		if ok {
			return m, nil
		}
		return Meta{}, fmt.Errorf("%w: %q (no origin configured)", ErrUnknownTitle, id)
	}
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	c.mu.Lock() // another refresh may have run meanwhile
	fetched := c.fetched
	c.mu.Unlock()
	if !fetched.IsZero() && now.Sub(fetched) < catalogMinRefresh {
		if m, ok := c.cached(id); ok {
			return m, nil
		}
		return Meta{}, fmt.Errorf("%w: %q", ErrUnknownTitle, id)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list, err := pb.ListAllTitles(ctx, c.origin.ListTitles) // a page at a time: a large catalog passes gRPC's 4 MB message limit
	if err != nil {
		if c.log != nil && status.Code(err) != codes.Canceled { // canceled: the caller gave up (a prefetch the operator evicted)
			if h := grpctls.OriginHint(err); h != "" {
				c.log.Error("origin catalog not read", "err", err, "hint", h)
			} else {
				c.log.Warn("origin catalog not read", "err", err)
			}
		}
		if ok {
			return m, nil // the cached entry, as good as it was
		}
		return Meta{}, fmt.Errorf("%w: list titles: %w", ErrOrigin, err) // its gRPC status kept: a refusal is not retried (vodnode retryLater)
	}
	titles := make(map[string]Meta, len(list))
	for _, t := range list {
		titles[t.GetId()] = metaOf(t)
	}
	// Read before the map is published: once it is, fresh writes into it
	// (under mu).
	m, ok = titles[id]
	c.mu.Lock()
	c.titles, c.fetched = titles, now
	c.mu.Unlock()
	if ok {
		return m, nil
	}
	return Meta{}, fmt.Errorf("%w: %q", ErrUnknownTitle, id)
}

// metaOf returns the metadata of the origin's catalog entry t.
func metaOf(t *pb.Title) Meta {
	return Meta{ID: t.GetId(), Size: t.GetSizeBytes(), Bitrate: t.GetBitrateBps(), Duration: t.GetDurationS(),
		Version: t.GetVersion(), HLSSegmentMax: t.GetHlsSegmentMaxS()}
}
