package acm

import (
	"time"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// expectLocked tells s's node ns that s's viewer, just placed there, is
// on its way (mu held): an ExpectCommand, queued before the viewer's
// redirect is answered, makes the node's own eviction (the room it makes
// for a fill, for its quota or its file system) keep s's title until the
// session starts there, is ended by the manager (EndSessionsCommand) or
// the deadline passes: the token signed at now expires after TokenTTL,
// and a viewer who never arrives is given NoShowGrace more before it is a
// no-show (tick). The node's title is kept whether it is stored, filling
// (already in use there) or missing (harmless). The command is not waited
// for: when the node's command queue is half full (expectQueue) it is
// dropped (debug log) rather than admission held up by a slow node, or
// the queue's room taken from the commands that must get through; the
// node may then evict the title before the viewer arrives, who is served
// by a fill as before. An admission undone before its redirect sends none
// (admit calls this last); one whose redirect is not delivered ends it on
// the node (abandon, unexpectLocked).
//
// The manager's own EvictCommands need no such message: s counts in
// ns.active from its admission (addSessionLocked) until it ends, and every
// eviction the manager orders skips a title active on the node (for a
// fill: reclaimLocked through itemsLocked's InUse; the operator's and the
// planner's: evictLocked; stale copies: staleLocked; partials:
// evictCopyOrPartialLocked).
func (m *Manager) expectLocked(ns *nodeState, s *session, now time.Time) {
	m.pushExpectLocked(ns, s, now.Add(m.TokenTTL+m.NoShowGrace))
}

// expectQueue is how many commands a node's queue may hold for an
// ExpectCommand to join them: one per admission, to a node whose stream
// is slow or down they would otherwise fill the whole queue (cmdQueue)
// and crowd out the commands that must get through (the room for a fill,
// EndSessions, drain, protect), which a full queue refuses or drops.
const expectQueue = cmdQueue / 2

// pushExpectLocked queues s's ExpectCommand with deadline until for its
// node ns (mu held), unless ns's queue holds expectQueue commands or more
// (dropped, debug log); it reports whether it was queued.
func (m *Manager) pushExpectLocked(ns *nodeState, s *session, until time.Time) bool {
	if len(ns.queue) >= expectQueue {
		m.log.Debug("expect not sent: command queue full", "node", ns.id, "session", s.ID, "title", s.Title, "queued", len(ns.queue))
		return false
	}
	return ns.push(expectCmd(s.ID, s.Title, until))
}

// reexpectNodeLocked sends node ns, as it registers, the ExpectCommands of
// its sessions whose viewers have not reached it yet (mu held): a node
// that restarted lost those it had, and one registering with a manager
// that took over from another heard them from that one. Each deadline is
// its session's no-show (noShowFrom + TokenTTL + NoShowGrace: from the
// newest token its viewer was given), as the last command's; a session
// past it is left out.
func (m *Manager) reexpectNodeLocked(ns *nodeState, now time.Time) {
	for _, s := range ns.sessions {
		if s.ended || s.State != store.StateAdmitted {
			continue
		}
		until := s.noShowFrom().Add(m.TokenTTL + m.NoShowGrace)
		if !until.After(now) {
			continue
		}
		if !m.pushExpectLocked(ns, s, until) {
			return
		}
	}
}

// unexpectLocked tells node ns that s, which it was told of
// (expectLocked), ended before its viewer was sent there (abandon: the
// redirect not delivered), with reason why (mu held): an
// EndSessionsCommand, which ends its protection there and refuses its
// token for a TokenTTL from now (a redirect that reached its client after
// all would play there without a reservation).
func (m *Manager) unexpectLocked(ns *nodeState, s *session, why string) {
	if !ns.push(&pb.NodeCommand{Command: &pb.NodeCommand_EndSessions{EndSessions: &pb.EndSessionsCommand{
		SessionIds: []string{s.ID}, Reason: why, RefuseUntilUnixMs: m.now().Add(m.TokenTTL).UnixMilli()}}}) {
		m.log.Warn("end of an abandoned session not sent: command queue full", "node", ns.id, "session", s.ID, "title", s.Title)
	}
}

// reexpect sends the ExpectCommand of session id again (expectLocked),
// with the deadline of a new token signed at now for the same viewer
// (regrant), while its viewer has not reached its node.
func (m *Manager) reexpect(id string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s == nil || s.ended || s.State != store.StateAdmitted {
		return
	}
	if ns := m.nodes[s.Node]; ns != nil {
		m.expectLocked(ns, s, now)
	}
}

func expectCmd(session, title string, until time.Time) *pb.NodeCommand {
	return &pb.NodeCommand{Command: &pb.NodeCommand_Expect{Expect: &pb.ExpectCommand{
		SessionId: session, TitleId: title, UntilUnixMs: until.UnixMilli(),
	}}}
}
