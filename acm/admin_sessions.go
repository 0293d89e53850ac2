package acm

import (
	"context"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// defaultEndReason is the reason of an operator's EndSessions without one.
const defaultEndReason = "ended by the operator"

// maxEndReason is the longest reason EndSessions takes, bytes (it goes
// into an RTCP BYE, whose reason is at most 255 bytes).
const maxEndReason = 200

// badReason reports whether an operator's reason (EndSessions,
// SuspendSubscriber) is refused: longer than maxEndReason bytes, or not
// printable text (notText: invalid UTF-8, C0, DEL or C1 controls).
func badReason(reason string) bool {
	return len(reason) > maxEndReason || notText(reason)
}

// heldRecordWait is how long the session record of a session the operator
// ended after its viewer reached its node (endOrderedLocked: one whose
// viewer never came is recorded at once) waits for its node's ENDED
// (which brings the bytes it sent) before
// it is written without them. A node reports a session it aborts once its
// last writes have ended (the RTCP BYE, a packet of a play under way),
// which a client not reading holds up to two of the node's 10 s write
// timeouts.
const heldRecordWait = 30 * time.Second

// endedRetryWait is how long the session record of a session that its
// node's first report after registering did not list waits for the node's
// ENDED: refused as UNAVAILABLE before the node registered, the event is
// retried after the node's backoff (at most 10 s apart, vodnode), which
// comes after that first report; queued by the node while it reached no
// manager, it is sent once the node registered, and may come after that
// report too.
const endedRetryWait = 30 * time.Second

// heldRecord is the session record of a session the operator ended, or
// that its node's first report did not list (session.awaitEnded), held
// until its node reports it ENDED (wait at most).
type heldRecord struct {
	rec   sessionRecord
	since time.Time
	wait  time.Duration // heldRecordWait or endedRetryWait
	// nodeReason: the ENDED's reason replaces the record's (the manager
	// ended the session for want of news, not for a reason of its own).
	nodeReason bool
}

// EndSessions implements pb.AdminServer: the operator ends sessions now,
// by id or every one of a subscriber. Each ends in the table (reservation
// released) and is ended by its node, told at once over its heartbeat
// stream; a viewer not yet at its node is refused there until its tokens
// expire. By user, the subscriber's requests waiting in the admission
// queue are refused (errEndedByOperator, 403) before the reservations
// are freed. Errors: INVALID_ARGUMENT (neither or both of ids and user, a
// reason too long or not printable), NOT_FOUND (no live session and no
// waiting request matches; of a user the users file holds, with
// pb.ReasonAlreadyDone), FAILED_PRECONDITION on a standby, UNAVAILABLE
// while the store does not answer (notLeader).
func (a *admin) EndSessions(ctx context.Context, req *pb.EndSessionsRequest) (*pb.EndSessionsResponse, error) {
	m := a.m
	ids, user := req.GetSessionIds(), req.GetUser()
	switch {
	case len(ids) == 0 && user == "":
		return nil, status.Error(codes.InvalidArgument, "name the sessions (session_ids) or the subscriber (user) whose sessions end")
	case len(ids) > 0 && user != "":
		return nil, status.Error(codes.InvalidArgument, "session_ids and user both given: give one of the two")
	case badReason(req.GetReason()):
		return nil, status.Errorf(codes.InvalidArgument, "reason: at most %d bytes of printable text", maxEndReason)
	case slices.ContainsFunc(ids, func(id string) bool { return !idPattern.MatchString(id) }):
		return nil, status.Error(codes.InvalidArgument, "session_ids: each an admission session id ([A-Za-z0-9._-]{1,128}; the SESSION column of vodctl sessions)")
	}
	if !m.Leader() {
		return nil, m.notLeader("end the sessions on the active manager")
	}
	reason := defaultEndReason
	if r := strings.TrimSpace(req.GetReason()); r != "" {
		reason = defaultEndReason + ": " + r
	}
	now := m.now()
	m.mu.Lock()
	// The subscriber's requests waiting in the admission queue go first:
	// the reservations freed below must not admit them.
	dropped := 0
	if user != "" {
		for tk, ch := range m.waiters {
			if tk.Req.Client == user && m.sched.Cancel(tk, errEndedByOperator) {
				delete(m.waiters, tk)
				close(ch)
				dropped++
			}
		}
	}
	var ended []*session
	if user != "" {
		for _, s := range m.sessions {
			if s.User == user {
				ended = append(ended, s)
			}
		}
	} else {
		for _, id := range ids {
			if s := m.sessions[id]; s != nil && !slices.Contains(ended, s) {
				ended = append(ended, s)
			}
		}
	}
	if len(ended) == 0 && dropped > 0 {
		m.mu.Unlock()
		m.log.Warn("sessions ended by the operator", "sessions", 0, "queued_requests_refused", dropped, "user", user)
		return &pb.EndSessionsResponse{}, nil
	}
	if len(ended) == 0 {
		m.mu.Unlock()
		if user != "" {
			return nil, m.nothingToDoFor(ctx, user, "has no live session")
		}
		return nil, status.Error(codes.NotFound, "none of the sessions is live (ended, or never admitted)")
	}
	out := &pb.EndSessionsResponse{}
	m.endOrderedLocked(ended, reason, now)
	for _, s := range ended {
		out.SessionIds = append(out.SessionIds, s.ID)
	}
	m.mu.Unlock()
	slices.Sort(out.SessionIds)
	m.log.Warn("sessions ended by the operator", "sessions", len(ended), "queued_requests_refused", dropped, "user", user, "reason", reason)
	m.persistAll(ended)
	m.kickPump()
	return out, nil
}

// endOrderedLocked ends ss on the manager's order (mu held): the
// operator's (EndSessions), or a new request of the subscriber that
// supersedes an idle session (supersedeIdleLocked). Each leaves the table
// (reservation released, its subscriber's slot freed), and its node is
// told at once over its heartbeat stream, with reason, to end it and
// refuse its tokens for a TokenTTL from now. The record of a session its
// viewer never brought to its node (no STARTED, no report listing it),
// whose node is registered here and was told, is written at once: the
// node refuses its token from then on (a viewer that reached it a moment
// before the order is cut off when the order arrives, and again if it
// reports the session: endedUnseenLocked); any other record waits for
// its node's ENDED. The caller persists ss once mu is released and kicks
// the pump.
func (m *Manager) endOrderedLocked(ss []*session, reason string, now time.Time) {
	byNode := map[string][]string{}
	for _, s := range ss {
		byNode[s.Node] = append(byNode[s.Node], s.ID)
	}
	// Every token of these sessions was signed by now and lives TokenTTL.
	until := now.Add(m.TokenTTL).UnixMilli()
	told := map[string]bool{}
	for node, sids := range byNode {
		if ns := m.nodes[node]; ns != nil {
			told[node] = ns.push(endSessionsCmd(sids, reason, until)) && m.registeredLocked(node)
		}
	}
	for _, s := range ss {
		unseen := told[s.Node] && s.State == store.StateAdmitted
		s.holdRecord = !unseen
		if unseen {
			m.noteEndedUnseenLocked(s, reason, until, now)
		}
		m.endLocked(s, reason)
		s.forget = m.lead != nil
		if ns := m.nodes[s.Node]; ns != nil {
			ns.endedAway[s.ID] = true // told again if its node still lists it (endUnknownLocked)
		} else {
			// Restored, its node not registered here yet: told when it
			// registers, if it plays it still.
			m.forgotEnded[s.Node] = append(m.forgotEnded[s.Node], s.ID)
		}
	}
}

// endSessionsCmd orders a node to end sessions sids for reason and refuse
// their tokens until untilMs (Unix ms).
func endSessionsCmd(sids []string, reason string, untilMs int64) *pb.NodeCommand {
	return &pb.NodeCommand{Command: &pb.NodeCommand_EndSessions{EndSessions: &pb.EndSessionsCommand{
		SessionIds: sids, Reason: reason, RefuseUntilUnixMs: untilMs}}}
}

// endedUnseen is a session the manager ended before its viewer reached
// its node, and recorded as never started (endOrderedLocked).
type endedUnseen struct {
	node, reason string
	untilMs      int64 // its node refuses its tokens until then (Unix ms)
}

// noteEndedUnseenLocked remembers s, ended for reason and recorded before
// its viewer reached its node, until its tokens expire (untilMs), and
// forgets those whose tokens expired by now (mu held).
func (m *Manager) noteEndedUnseenLocked(s *session, reason string, untilMs int64, now time.Time) {
	if m.endedUnseen == nil {
		m.endedUnseen = map[string]endedUnseen{}
	}
	for id, u := range m.endedUnseen {
		if u.untilMs < now.UnixMilli() {
			delete(m.endedUnseen, id)
		}
	}
	m.endedUnseen[s.ID] = endedUnseen{node: s.Node, reason: reason, untilMs: untilMs}
}

// endedUnseenLocked handles ev, an event of a session this manager does
// not hold, when the session is one it ended and recorded before its
// viewer reached its node (mu held), and reports whether it was: the
// viewer reached the node a moment before the order did. A STARTED has
// the node told again to end it (the order may have been lost with a
// broken stream); the bytes an ENDED counts are not in the record, which
// is logged.
func (m *Manager) endedUnseenLocked(ev *pb.SessionEvent) bool {
	u, ok := m.endedUnseen[ev.GetSessionId()]
	if !ok || u.node != ev.GetNodeId() {
		return false
	}
	if ev.GetKind() == pb.SessionEvent_KIND_STARTED {
		m.log.Warn("session started at its node after this manager ended it before its viewer came (its order to end it was late): the node is told again to end it",
			"node", u.node, "session", ev.GetSessionId(), "title", ev.GetTitleId())
		if ns := m.nodes[u.node]; ns != nil {
			ns.push(endSessionsCmd([]string{ev.GetSessionId()}, u.reason, u.untilMs))
		}
		return true
	}
	delete(m.endedUnseen, ev.GetSessionId())
	if ev.GetBytesSent() > 0 {
		m.log.Warn("session ended at its node, which sent it bytes before this manager's order to end it arrived: its record (written as never started) lacks them",
			"node", u.node, "session", ev.GetSessionId(), "title", ev.GetTitleId(), "bytes_sent", ev.GetBytesSent(), "reason", ev.GetReason())
		return true
	}
	return false
}

// holdRecordLocked keeps rec until the node's ENDED of its session
// (recordEndedLocked) or wait (flushHeldRecordsLocked); with nodeReason
// the ENDED's reason replaces rec's.
func (m *Manager) holdRecordLocked(rec sessionRecord, now time.Time, wait time.Duration, nodeReason bool) {
	if m.heldRecords == nil {
		m.heldRecords = map[string]heldRecord{}
	}
	m.heldRecords[rec.Session] = heldRecord{rec: rec, since: now, wait: wait, nodeReason: nodeReason}
}

// recordEndedLocked completes the held record of session sid with what
// its node's ENDED says (bytes sent, when) and writes it; false when none
// is held.
func (m *Manager) recordEndedLocked(ev *pb.SessionEvent, at time.Time) bool {
	h, ok := m.heldRecords[ev.GetSessionId()]
	if !ok || ev.GetKind() != pb.SessionEvent_KIND_ENDED || (ev.GetNodeId() != "" && ev.GetNodeId() != h.rec.Node) {
		return false
	}
	delete(m.heldRecords, ev.GetSessionId())
	h.rec.BytesSent, h.rec.BytesSentUnknown, h.rec.BytesSentAsOfReport = ev.GetBytesSent(), false, false
	if h.nodeReason && ev.GetReason() != "" {
		h.rec.Reason = ev.GetReason()
	}
	// The node's end, after the start: before the manager's (an operator
	// ended it, the node later), or in place of the manager's guess when
	// the manager ended it for want of news (nodeReason).
	nodeTime := ev.GetAtUnixMs() > 0 // at is the node's, not when the ENDED came
	if !h.rec.StartedAt.IsZero() && ((h.nodeReason && nodeTime) || at.Before(h.rec.EndedAt.Time)) && !at.Before(h.rec.StartedAt.Time) {
		h.rec.EndedAt = recordTime{at.UTC()}
		h.rec.PlayedS = playedSeconds(at.Sub(h.rec.StartedAt.Time))
	}
	if !h.rec.StartedAt.IsZero() {
		h.rec.PausedS = min(h.rec.PlayedS, pausedSeconds(ev.GetPausedMs()))
	}
	m.records.add(h.rec)
	return true
}

// flushHeldRecordsLocked writes the held records whose node has not said
// ENDED within their wait (dead, or the viewer never came), without
// the ENDED's bytes sent (with its load reports' last figure, if any:
// reportedBytesLocked); all of them when all is set (Close).
func (m *Manager) flushHeldRecordsLocked(now time.Time, all bool) {
	for id, h := range m.heldRecords {
		if all || now.Sub(h.since) >= h.wait {
			delete(m.heldRecords, id)
			m.records.add(h.rec)
		}
	}
}
