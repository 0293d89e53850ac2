package vodnode

import (
	"context"
	"time"

	"vodcluster/vodnode/store"
)

// maxRefills bounds the fills one session (RTSP or HTTP) starts again
// (refillCopy): each failed copy stays held, its file open, until the
// session ends.
const maxRefills = 8

// refillable reports whether old, the copy of a title a session holds,
// may be filled again for the session (refillCopy): its fill failed for
// the origin (away longer than fill_retry_for, its transfers broken:
// store.FailCause "origin") and a retry may succeed (retryLater). A fill
// that failed otherwise (the title replaced or withdrawn at the origin,
// its bytes not its version's, the node's disk, the node's credential
// refused), a complete copy, one still filling or none (nil) is not.
func refillable(old *store.Title) bool {
	if old == nil {
		return false
	}
	v := old.View()
	return v.Err != nil && !v.Complete && retryLater(v.Err) && store.FailCause(v.Err) == "origin"
}

// refillCopy acquires title (its copy old refillable) again for a
// session: the store resumes its fill from the partial the failed fill
// left. spent, called under n.mu before, reports whether the session may
// not take another copy (it ended, or holds maxRefills failed ones);
// install, called under n.mu with the new copy unless spent says so
// then, makes it the session's and keeps old held until the session
// ends. A new copy that is not the same version of the title (another
// meta: replaced at the origin since; its bytes would follow the other
// version's the viewer has) is released, as one spent refuses. It
// returns the copy installed, nil when none was. Errors: the new fill's
// refusal (storeError: 503 with Retry-After while the origin is still
// away, within requestTimeout).
func (n *Node) refillCopy(ctx context.Context, title string, old *store.Title, spent func() bool, install func(*store.Title)) (*store.Title, *rtspError) {
	n.mu.Lock()
	no := spent()
	n.mu.Unlock()
	if no {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	t, err := n.store.Acquire(ctx, title)
	if err != nil {
		return nil, storeError(err)
	}
	if t == old || t.Meta() != old.Meta() {
		// old itself (its failure not yet out of the store's titles),
		// or another version
		n.store.Release(t)
		return nil, nil
	}
	n.mu.Lock()
	no = spent()
	if !no {
		install(t)
	}
	n.mu.Unlock()
	if no {
		n.store.Release(t)
		return nil, nil
	}
	return t, nil
}

// rtspRefillWait bounds what a PLAY waits for its session's refill
// (refillRTSP), and, for a play under way at the end of the bytes on
// disk, what it waits for the new fill's first bytes past them
// (refillPlaying); rtspRefillBackoff is how long a refill refused (or
// whose fill brought nothing then) is not tried again for the session.
const (
	rtspRefillWait    = 3 * time.Second
	rtspRefillBackoff = 10 * time.Second
)

// refillRTSP gives s, an RTSP session whose copy's fill failed for the
// origin (refillable), a new fill of the title (refillCopy): at its PLAY,
// and when its play under way reaches the end of the bytes the failed
// fill left (refillPlaying; at names which in the log). Its stream's
// source (aheadSource.refilled) reads the new copy, so that the play goes
// on past the bytes the failed fill left once the origin is back, from
// where it stands. Bound to its failed fill for good, a PLAY past those
// bytes was answered 503 at every try, and a play under way ended there
// with its "fill failed" BYE. The failed copy stays held until s ends
// (finishSession releases it with the copy s holds then); the
// reservation is unchanged (the same meta, its bitrate). A refill
// refused (the origin still away) leaves s as it was, and is not tried
// again for rtspRefillBackoff: its PLAY plays what is on disk, and one
// past it gets the failed fill's 503. It returns the new copy, nil when
// none was installed. Under s.ctl.
func (n *Node) refillRTSP(ctx context.Context, s *session, at string) *store.Title {
	old := s.t()
	if !refillable(old) || time.Now().Before(s.refillAfter) {
		return nil
	}
	// A PLAY waits at most rtspRefillWait for it (a resume within the
	// bytes on disk needs none of it; set-top boxes give up on a PLAY
	// in a few seconds), and one refused is not tried again for
	// rtspRefillBackoff (every PLAY of a box retrying against an origin
	// still away).
	ctx, cancel := context.WithTimeout(ctx, rtspRefillWait)
	defer cancel()
	t, err := n.refillCopy(ctx, s.title, old, func() bool { return s.ended || len(s.retired) >= maxRefills }, func(t *store.Title) {
		s.retired = append(s.retired, old)
		s.cur.Store(t)
	})
	if err != nil {
		s.refillAfter = time.Now().Add(rtspRefillBackoff)
		n.log.Info("rtsp session: its title's fill had failed; filling it again was refused", "session", s.id, "sid", s.sid, "title", s.title, "at", at, "err", err.reason)
		return nil
	}
	if t == nil {
		return nil
	}
	if s.ahead != nil { // an ES session's first PLAY makes its source from s.t()
		s.ahead.refilled(t)
	}
	n.log.Info("rtsp session: its title's fill had failed; filling it again for the session", "session", s.id, "sid", s.sid, "title", s.title, "at", at,
		"stored_bytes", t.View().Index.Size)
	return t
}

// refillPlaying is the OnFillFailed of s's MP2T stream
// (deliver.StreamConfig), whose normal play has reached the end of the
// bytes its copy's failed fill left (its trick play: wherever it stands
// once the fill failed), and of its elementary-stream play
// (deliver.ESConfig; its source s.ahead as well), whose reader has, or
// whose seek is past them: it fills the title again for s
// (refillRTSP, under s.ctl, as a PLAY does) and waits, up to
// rtspRefillWait, for the new fill to bring bytes past the failed one's.
// True when it did (or a PLAY had filled it again meanwhile): the stream
// plays on from where it stands, its viewer not cut off ~where the origin
// went away. False when the copy is not refillable (the fill failed
// otherwise than for the origin, another version at the origin,
// maxRefills spent, a refill refused within rtspRefillBackoff), the
// refill is refused, or its fill brings no byte within rtspRefillWait
// (the origin still away: not tried again for rtspRefillBackoff): the
// stream then ends with its "fill failed" BYE, as it did. It runs on a
// goroutine of the stream's, without its lock (an ES play stopped by a
// PLAY, PAUSE or TEARDOWN under s.ctl meanwhile does not wait for it).
func (n *Node) refillPlaying(s *session) bool {
	s.ctl.Lock()
	old := s.t()
	if old.View().Err == nil {
		s.ctl.Unlock()
		return true // filled again meanwhile (a PLAY's refill)
	}
	from := old.View().Index.Size // where the failed fill stopped
	n.refillRTSP(n.ctx, s, "end of the bytes on disk")
	t := s.t()
	s.ctl.Unlock()
	v := t.View()
	if v.Err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(n.ctx, rtspRefillWait)
	defer cancel()
	more := make(chan struct{})
	if !t.Notify(from, func() { close(more) }) {
		close(more)
	}
	select {
	case <-more:
	case <-ctx.Done():
	}
	if v = t.View(); v.Index.Size > from || (v.Complete && v.Err == nil) {
		return true
	}
	if v.Err == nil && n.ctx.Err() == nil {
		s.ctl.Lock()
		s.refillAfter = time.Now().Add(rtspRefillBackoff)
		s.ctl.Unlock()
		n.log.Info("rtsp session: its title filled again at the end of the bytes on disk brought nothing; the origin is still away", "session", s.id, "sid", s.sid, "title", s.title,
			"waited", rtspRefillWait)
	}
	return false
}
