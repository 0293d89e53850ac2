package acm

import (
	"context"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
// ended waits for its node's ENDED (which brings the bytes it sent) before
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
// (reservation released, its subscriber's slot freed), its record waits
// for its node's ENDED, and its node is told at once over its heartbeat
// stream, with reason, to end it and refuse its tokens for a TokenTTL
// from now. The caller persists ss once mu is released and kicks the
// pump.
func (m *Manager) endOrderedLocked(ss []*session, reason string, now time.Time) {
	byNode := map[string][]string{}
	for _, s := range ss {
		s.holdRecord = true
		m.endLocked(s, reason)
		s.forget = m.lead != nil
		byNode[s.Node] = append(byNode[s.Node], s.ID)
		if ns := m.nodes[s.Node]; ns != nil {
			ns.endedAway[s.ID] = true // told again if its node still lists it (endUnknownLocked)
		} else {
			// Restored, its node not registered here yet: told when it
			// registers, if it plays it still.
			m.forgotEnded[s.Node] = append(m.forgotEnded[s.Node], s.ID)
		}
	}
	// Every token of these sessions was signed by now and lives TokenTTL.
	until := now.Add(m.TokenTTL).UnixMilli()
	for node, sids := range byNode {
		if ns := m.nodes[node]; ns != nil {
			ns.push(&pb.NodeCommand{Command: &pb.NodeCommand_EndSessions{EndSessions: &pb.EndSessionsCommand{
				SessionIds: sids, Reason: reason, RefuseUntilUnixMs: until}}})
		}
	}
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
