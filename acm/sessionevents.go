package acm

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// ReportSession implements pb.NodeControlServer: STARTED marks the session
// playing; ENDED releases its reservation and removes it. INVALID_ARGUMENT
// for a missing session id, node id or kind, UNAVAILABLE for a session the manager
// does not hold but the store does, from a node not registered with it
// (yet: it loads the node's sessions from the store when it registers,
// and the node retries),
// NOT_FOUND for a session the manager does not hold otherwise (never
// admitted, already ended and released, or lost: an ENDED is logged
// once, logLostEndedLocked), FAILED_PRECONDITION when the
// reporting node is not the session's node. INVALID_ARGUMENT too for an
// at_unix_ms below 0 or past the year 9999 (maxUnixMs), which no session
// record can hold, and for a negative bytes_sent or paused_ms.
func (nc *nodeControl) ReportSession(_ context.Context, ev *pb.SessionEvent) (*pb.SessionEventAck, error) {
	m := nc.m
	if ev.GetSessionId() == "" {
		return nil, status.Error(codes.InvalidArgument, "session_id is required")
	}
	if ev.GetNodeId() == "" {
		// Without it the event could end a session on any node.
		return nil, status.Error(codes.InvalidArgument, "node_id is required: the node the session plays on")
	}
	if ev.GetKind() != pb.SessionEvent_KIND_STARTED && ev.GetKind() != pb.SessionEvent_KIND_ENDED {
		return nil, status.Errorf(codes.InvalidArgument, "kind %v: want STARTED or ENDED", ev.GetKind())
	}
	if ms := ev.GetAtUnixMs(); ms < 0 || ms > maxUnixMs {
		return nil, status.Errorf(codes.InvalidArgument, "at_unix_ms %d: want milliseconds since the Unix epoch up to the year 9999, or 0 (now)", ms)
	}
	if b := ev.GetBytesSent(); b < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "bytes_sent %d: want the bytes the node sent, 0 or more", b)
	}
	if p := ev.GetPausedMs(); p < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "paused_ms %d: want the milliseconds the session was paused, 0 or more", p)
	}
	at := m.now()
	if ev.GetAtUnixMs() > 0 {
		at = time.UnixMilli(ev.GetAtUnixMs())
	}
	m.mu.Lock()
	s := m.sessions[ev.GetSessionId()]
	switch {
	case s == nil && m.recordEndedLocked(ev, at):
		m.mu.Unlock()
		return &pb.SessionEventAck{}, nil // ended by the operator: its record is complete
	case s == nil && m.endedUnseenLocked(ev):
		m.mu.Unlock()
		if ev.GetKind() == pb.SessionEvent_KIND_ENDED {
			return &pb.SessionEventAck{}, nil // taken: its bytes logged (the record was written)
		}
		return nil, status.Errorf(codes.NotFound, "session %s was ended by the manager before its viewer reached the node: end it there", ev.GetSessionId())
	case s == nil && !m.registeredLocked(ev.GetNodeId()):
		m.mu.Unlock()
		if m.storedLive(ev.GetSessionId()) {
			// A node that reports before it registered here (the front
			// door's address moved to this manager after a failover): its
			// sessions load when it registers, so the event is retried
			// then, not dropped with the bytes and the end time it carries.
			if ev.GetKind() == pb.SessionEvent_KIND_ENDED {
				m.mu.Lock()
				m.noteEndedRefusedLocked(ev.GetSessionId(), m.now())
				m.mu.Unlock()
			}
			return nil, status.Errorf(codes.Unavailable, "node %s has not registered with this manager yet: report session %s again once it has (its sessions load then)", ev.GetNodeId(), ev.GetSessionId())
		}
		m.mu.Lock()
		m.logLostEndedLocked(ev, at)
		m.mu.Unlock()
		return nil, status.Errorf(codes.NotFound, "session %s is not in the session table (ended or never admitted)", ev.GetSessionId())
	case s == nil:
		m.logLostEndedLocked(ev, at)
		m.mu.Unlock()
		return nil, status.Errorf(codes.NotFound, "session %s is not in the session table (ended or never admitted)", ev.GetSessionId())
	case ev.GetNodeId() != s.Node:
		m.mu.Unlock()
		return nil, status.Errorf(codes.FailedPrecondition, "session %s was placed on node %q, not %q", s.ID, s.Node, ev.GetNodeId())
	}
	if ev.GetKind() == pb.SessionEvent_KIND_STARTED {
		if s.State == store.StateAdmitted {
			s.State, s.StartedAt, s.startedNodeMs = store.StatePlaying, at, ev.GetAtUnixMs()
			if ns := m.nodes[s.Node]; ns != nil {
				s.playingAt = ns.reports
			}
		}
	} else {
		reason := ev.GetReason()
		if reason == "" {
			reason = "ended at node"
		}
		if !s.ended {
			m.sessionEndedLocked(s, at)
			s.bytesSent, s.bytesReported, s.endedAt = ev.GetBytesSent(), true, at
			s.pausedMs = ev.GetPausedMs()
		}
		delete(m.endedRefused, s.ID) // retried in time: nothing to hold
		m.endLocked(s, reason)
	}
	m.mu.Unlock()
	if err := m.persist(s); err != nil {
		return nil, status.Errorf(codes.Unavailable, "session %s: store: %v", s.ID, err)
	}
	if ev.GetKind() == pb.SessionEvent_KIND_ENDED {
		m.kickPump()
	}
	return &pb.SessionEventAck{}, nil
}

// endedRefusedKeep is how long endedRefused remembers a session: its node
// may take a failover's time to register here.
const endedRefusedKeep = 10 * time.Minute

// noteEndedRefusedLocked remembers that the ENDED of session sid was
// refused as UNAVAILABLE at now (mu held), and forgets those older than
// endedRefusedKeep.
func (m *Manager) noteEndedRefusedLocked(sid string, now time.Time) {
	if m.endedRefused == nil {
		m.endedRefused = map[string]time.Time{}
	}
	for id, at := range m.endedRefused {
		if now.Sub(at) > endedRefusedKeep {
			delete(m.endedRefused, id)
		}
	}
	m.endedRefused[sid] = now
}

// storedLive reports whether the store holds session id as live (not
// ended), or cannot say (it does not answer within 2 s).
func (m *Manager) storedLive(id string) bool {
	ctx, cancel := context.WithTimeout(m.ctx, 2*time.Second)
	defer cancel()
	st, err := m.st.Session(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false
	case err != nil:
		return true
	}
	return st.State != store.StateEnded
}

// registeredLocked reports whether node id registered with this manager
// and is alive here (mu held).
func (m *Manager) registeredLocked(id string) bool {
	n := m.sched.Node(id)
	return n != nil && n.Alive && m.nodes[id] != nil
}
