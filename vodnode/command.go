package vodnode

import (
	"context"
	"errors"
	"log/slog"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/vodnode/store"
)

// command carries out one order of the manager.
func (m *managerLink) command(cmd *pb.NodeCommand) {
	n := m.n
	switch c := cmd.GetCommand().(type) {
	case *pb.NodeCommand_Prefetch:
		id := c.Prefetch.GetTitleId()
		ctx, cancel := context.WithTimeout(m.ctx, requestTimeout)
		run := m.prefetches.start(id, cancel)
		go func() {
			defer cancel()
			err := n.store.Prefetch(ctx, id)
			if m.prefetches.end(id, run) {
				m.evictStarted(id, err)
				return
			}
			if err != nil {
				n.log.Warn("prefetch refused", "title", id, "err", err)
				n.store.NoteFailure(store.Failure{Title: id, Reason: err.Error(), Prefetch: true, At: time.Now()})
			}
		}()
	case *pb.NodeCommand_Evict:
		id := c.Evict.GetTitleId()
		if c.Evict.GetReason() == evictReasonOperator && m.prefetches.evict(id) {
			n.log.Info("prefetch being started cancelled by the manager's eviction", "title", id)
			return
		}
		cancelled, err := n.evict(id, c.Evict.GetReason())
		if err != nil {
			switch {
			case errors.Is(err, store.ErrUnknownTitle) && c.Evict.GetReason() == evictReasonOperator:
				// The operator's eviction of a prefetch the manager
				// cancelled before its order was sent.
				n.log.Info("evict: title not on the node, nothing to do", "title", id, "reason", c.Evict.GetReason())
			case errors.Is(err, store.ErrInUse):
				n.log.Info("evict ignored: title in use", "title", id, "reason", c.Evict.GetReason())
			default:
				n.log.Warn("evict failed", "title", id, "reason", c.Evict.GetReason(), "err", err)
			}
			return
		}
		if cancelled {
			n.log.Info("prefetch cancelled by the manager's eviction: its fill stops, its bytes are dropped", "title", id, "reason", c.Evict.GetReason())
			return
		}
		n.log.Info("title evicted by the manager", "title", id, "reason", c.Evict.GetReason())
	case *pb.NodeCommand_Drain:
		n.SetDraining(c.Drain.GetDrain())
		n.log.Info("drain", "draining", c.Drain.GetDrain())
	case *pb.NodeCommand_Protect:
		n.store.SetProtected(c.Protect.GetTitleIds())
		n.log.Info("protected titles", "titles", len(c.Protect.GetTitleIds()))
	case *pb.NodeCommand_Expect:
		e := c.Expect
		if !n.expect(e) {
			n.log.Debug("expect ignored: past its deadline, without a session or title, or the session already arrived", "sid", e.GetSessionId(), "title", e.GetTitleId(), "until_unix_ms", e.GetUntilUnixMs())
			return
		}
		n.log.Debug("viewer expected: title kept from eviction until it arrives", "sid", e.GetSessionId(), "title", e.GetTitleId(), "until_unix_ms", e.GetUntilUnixMs())
	case *pb.NodeCommand_EndSessions:
		reason := c.EndSessions.GetReason()
		if reason == "" {
			reason = "ended by the manager"
		}
		// A viewer ended before it arrived keeps its title no longer.
		n.store.Unexpect(c.EndSessions.GetSessionIds()...)
		// Tokens first: a setup in progress, which endAdmission leaves
		// alone, is refused when it completes.
		if ms := c.EndSessions.GetRefuseUntilUnixMs(); ms > 0 {
			n.refuseTokens(c.EndSessions.GetSessionIds(), time.UnixMilli(ms))
		}
		ended := 0
		for _, sid := range c.EndSessions.GetSessionIds() {
			if n.endAdmission(sid, reason) {
				ended++
			}
		}
		n.endedByManager(c.EndSessions.GetSessionIds())
		// At warn when it cut sessions here; one whose viewer never came
		// (a viewer the manager moved to another node before it
		// arrived) only has its token refused.
		level := slog.LevelWarn
		if ended == 0 {
			level = slog.LevelInfo
		}
		n.log.Log(context.Background(), level, "sessions ended by the manager", "sessions", ended, "of", len(c.EndSessions.GetSessionIds()), "reason", reason)
	}
}
