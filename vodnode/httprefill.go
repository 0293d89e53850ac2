package vodnode

import (
	"context"
	"time"

	"vodcluster/vodnode/store"
)

// t returns the copy of the title hs holds (nil until set up).
func (hs *httpSession) t() *store.Title { return hs.cur.Load() }

// maxRefills bounds the fills one HTTP session starts again (refill):
// each failed copy stays held, its file open, until the session ends.
const maxRefills = 8

// refill gives hs, whose copy's fill failed for the origin (away longer
// than fill_retry_for, its transfers broken: store.FailCause "origin"), a
// new fill of the title when one of its requests comes: the store resumes
// it from the partial the failed fill left, so the viewer goes on past
// the bytes on disk once the origin is back. A session bound to its
// failed fill for good was answered 503 with Retry-After at every request
// past those bytes, its retries never mended. The failed copy stays held
// until the session ends (requests in progress read it). A fill that
// failed otherwise (the title replaced or withdrawn at the origin, its
// bytes not its version's, the node's disk, the node's credential
// refused), a new copy that is not the same version of the title (the
// same meta: replaced at the origin since; its bytes would follow the
// other version's the viewer has), or maxRefills failed copies leave hs
// as it was: its requests get the failed fill's answer. Errors: the new
// fill's refusal (storeError: 503 with Retry-After while the origin is
// still away).
func (n *Node) refill(ctx context.Context, hs *httpSession) *rtspError {
	old := hs.t()
	if old == nil {
		return nil
	}
	if v := old.View(); v.Err == nil || v.Complete || !retryLater(v.Err) || store.FailCause(v.Err) != "origin" {
		return nil
	}
	hs.refillMu.Lock()
	defer hs.refillMu.Unlock()
	n.mu.Lock()
	spent := len(hs.retired) >= maxRefills
	n.mu.Unlock()
	if hs.t() != old || spent {
		return nil // another request of the session refilled it, or enough did
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	t, err := n.store.Acquire(ctx, hs.title)
	if err != nil {
		return storeError(err)
	}
	if t.Meta() != old.Meta() {
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
