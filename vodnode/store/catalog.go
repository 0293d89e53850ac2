package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// catalogMinRefresh bounds how often a miss refreshes the catalog, so that
// requests for unknown titles do not hammer the origin.
const catalogMinRefresh = time.Second

// catalog caches the origin's ListTitles answer.
type catalog struct {
	origin pb.OriginClient

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

// lookup returns title id from the cache, refreshing it from the origin on
// a miss (at most once per catalogMinRefresh).
func (c *catalog) lookup(ctx context.Context, id string, now time.Time) (Meta, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.titles[id]; ok {
		return m, nil
	}
	if c.origin == nil {
		return Meta{}, fmt.Errorf("%w: %q (no origin configured)", ErrUnknownTitle, id)
	}
	if !c.fetched.IsZero() && now.Sub(c.fetched) < catalogMinRefresh {
		return Meta{}, fmt.Errorf("%w: %q", ErrUnknownTitle, id)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := c.origin.ListTitles(ctx, &pb.ListTitlesRequest{})
	if err != nil {
		return Meta{}, fmt.Errorf("%w: list titles: %v", ErrOrigin, err)
	}
	c.fetched = now
	c.titles = make(map[string]Meta, len(res.GetTitles()))
	for _, t := range res.GetTitles() {
		c.titles[t.GetId()] = Meta{ID: t.GetId(), Size: t.GetSizeBytes(), Bitrate: t.GetBitrateBps(), Duration: t.GetDurationS()}
	}
	if m, ok := c.titles[id]; ok {
		return m, nil
	}
	return Meta{}, fmt.Errorf("%w: %q", ErrUnknownTitle, id)
}
