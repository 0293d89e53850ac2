package vodnode

import (
	"context"
	"time"

	"vodcluster/vodnode/store"
)

// t returns the copy of the title hs holds (nil until set up).
func (hs *httpSession) t() *store.Title { return hs.cur.Load() }

// refill gives hs, whose copy's fill failed for the origin (refillable),
// a new fill of the title when one of its requests comes (refillCopy):
// the store resumes it from the partial the failed fill left, so the
// viewer goes on past the bytes on disk once the origin is back. A
// session bound to its failed fill for good was answered 503 with
// Retry-After at every request past those bytes, its retries never
// mended. The failed copy stays held until the session ends (requests in
// progress read it). A copy not refillable, a new copy that is not the
// same version of the title, or maxRefills failed copies leave hs as it
// was: its requests get the failed fill's answer. Errors: the new fill's
// refusal (storeError: 503 with Retry-After while the origin is still
// away).
func (n *Node) refill(ctx context.Context, hs *httpSession) *rtspError {
	old := hs.t()
	if !refillable(old) {
		return nil
	}
	hs.refillMu.Lock()
	defer hs.refillMu.Unlock()
	if hs.t() != old {
		return nil // another request of the session refilled it
	}
	t, err := n.refillCopy(ctx, hs.title, old, func() bool { return hs.ended || len(hs.retired) >= maxRefills }, func(t *store.Title) {
		hs.retired = append(hs.retired, old)
		hs.cur.Store(t)
	})
	if err != nil || t == nil {
		return err
	}
	n.log.Info("http session: its title's fill had failed; filling it again for the session's request", "sid", hs.sid, "title", hs.title,
		"stored_bytes", t.View().Index.Size, "after", time.Since(hs.startedAt).Round(time.Second))
	return nil
}
