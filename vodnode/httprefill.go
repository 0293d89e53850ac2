package vodnode

import (
	"context"
	"time"

	"vodcluster/vodnode/store"
)

// t returns the copy of the title hs holds (nil until set up).
func (hs *httpSession) t() *store.Title { return hs.cur.Load() }

// refill gives hs, whose copy's fill failed (the origin away longer than
// fill_retry_for, its transfers broken), a new fill of the title when one
// of its requests comes: the store resumes it from the partial the failed
// fill left, so the viewer goes on past the bytes on disk once the origin
// is back. A session bound to its failed fill for good was answered 503
// with Retry-After at every request past those bytes, its retries never
// mended. The failed copy stays held until the session ends (requests
// in progress read it). A fill that cannot be retried soon (the title
// replaced or withdrawn at the origin, the node's credential refused:
// retryLater), or a new copy of another size or bitrate than the
// session's (replaced there), leaves hs as it was: its requests get the
// failed fill's answer. Errors: the new fill's refusal (storeError: 503
// with Retry-After while the origin is still away).
func (n *Node) refill(ctx context.Context, hs *httpSession) *rtspError {
	old := hs.t()
	if old == nil {
		return nil
	}
	if v := old.View(); v.Err == nil || v.Complete || !retryLater(v.Err) {
		return nil
	}
	hs.refillMu.Lock()
	defer hs.refillMu.Unlock()
	if hs.t() != old {
		return nil // another request of the session refilled it
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	t, err := n.store.Acquire(ctx, hs.title)
	if err != nil {
		return storeError(err)
	}
	if t.Meta().Size != hs.meta.Size || t.Meta().Bitrate != hs.meta.Bitrate {
		n.store.Release(t)
		return nil
	}
	n.mu.Lock()
	ended := hs.ended
	if !ended {
		hs.retired = append(hs.retired, old)
		hs.cur.Store(t)
	}
	n.mu.Unlock()
	if ended {
		n.store.Release(t)
		return nil
	}
	n.log.Info("http session: its title's fill had failed; filling it again for the session's request", "sid", hs.sid, "title", hs.title,
		"stored_bytes", t.View().Index.Size, "after", time.Since(hs.startedAt).Round(time.Second))
	return nil
}
