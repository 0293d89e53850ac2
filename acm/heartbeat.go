package acm

import (
	"context"
	"errors"
	"io"
	"math"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/store"
	"vodcluster/lsm"
	pb "vodcluster/proto/vodcluster/v1"
)

// Heartbeat implements pb.NodeControlServer. The first report names the
// node (FAILED_PRECONDITION when it has not registered); each report
// feeds lsm and pumps the queue; commands queued for the node are sent
// down the stream. A newer stream of the same node replaces this one
// (ABORTED on its next report). A stream the node ends cleanly (it shuts
// down) takes it out of service at once; a broken one (a crash, a cut
// link) stops new sessions to it at once (lsm.SetUnreachable) until its
// next report, and the missed heartbeats (lsm.Tick) declare it dead.
func (nc *nodeControl) Heartbeat(stream pb.NodeControl_HeartbeatServer) error {
	m := nc.m
	r, err := stream.Recv()
	if err != nil {
		return err
	}
	m.mu.Lock()
	ns := m.nodes[r.GetNodeId()]
	if ns == nil || m.sched.Node(r.GetNodeId()) == nil {
		m.mu.Unlock()
		return status.Errorf(codes.FailedPrecondition, "node %q is not registered: call Register first", r.GetNodeId())
	}
	ns.stopStream()
	ctx, cancel := context.WithCancel(stream.Context())
	ns.streamGen++
	gen := ns.streamGen
	ns.streamCancel = cancel
	m.mu.Unlock()

	senderDone := make(chan struct{})
	go func() {
		defer close(senderDone)
		m.sendCommands(ctx, stream, ns, gen)
	}()
	ns.signal() // commands queued while the node had no stream
	defer func() {
		cancel()
		<-senderDone
		m.mu.Lock()
		if ns.streamGen == gen {
			ns.streamCancel = nil
		}
		m.mu.Unlock()
	}()
	for {
		if err := m.report(ns, gen, r); err != nil {
			return err
		}
		if r, err = stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				m.nodeLeft(ns, gen)
				return nil
			}
			m.streamBroke(ns, gen, err)
			return err
		}
	}
}

// nodeLeft takes ns out of service at once: it ended its heartbeat stream
// cleanly (it shuts down), so no viewer should be sent there while the
// missed heartbeats are counted. Its sessions are orphaned as at a death
// (the node reports their ends as it stops). The stream's command sender
// stops too: a command queued from now on (an operator's eviction on the
// node listed dead, "when it is back") waits for the node's return
// instead of going down the stream the node is closing, where a node
// shutting down would not carry it out. A goodbye on a stream a newer one
// replaced is ignored.
func (m *Manager) nodeLeft(ns *nodeState, gen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ns.streamGen != gen {
		return
	}
	ns.stopStream()
	m.sched.MarkDead(ns.id)
	m.orphanLocked(ns, m.now(), true)
	m.log.Info("node left: out of service until it registers again", "node", ns.id)
}

// sendCommands sends the node's commands down the stream of generation
// gen until ctx ends or a newer stream takes over: the protect command of
// its pins when one is due (nodeState.pins), then the drain command of its
// drain state when one is due (nodeState.drain), then the queued ones.
// Commands a broken stream could not take go back to the front of the
// queue for the next stream, but for the prefetches and evictions a
// registration without an origin since then drops
// (dropNoOriginCmdsLocked), the prefetches whose order was queued again
// meanwhile (dropResentPrefetchCmdsLocked) and, after any registration
// since, the prefetches whose order it ended
// (putBackAfterRegistrationLocked); a protect or drain command not sent
// is due again with the pins or the drain state as they are, unless a
// newer one is.
func (m *Manager) sendCommands(ctx context.Context, stream pb.NodeControl_HeartbeatServer, ns *nodeState, gen uint64) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.ctx.Done():
			return
		case <-ns.wake:
		}
		m.mu.Lock()
		if ns.streamGen != gen || ctx.Err() != nil {
			ns.signal() // the wake-up was for the newer stream
			m.mu.Unlock()
			return
		}
		// The pins as they are go first (sendProtectLocked), then the
		// drain state (setDrainLocked), then the queue.
		batch, reg, slots := ns.queue, ns.regGen, 0
		if ns.pins != nil || ns.drain != nil {
			var due []*pb.NodeCommand
			for _, c := range []*pb.NodeCommand{ns.pins, ns.drain} {
				if c != nil {
					due = append(due, c)
				}
			}
			slots = len(due)
			batch = append(due, batch...)
		}
		ns.queue, ns.pins, ns.drain = nil, nil, nil
		m.mu.Unlock()
		for i, cmd := range batch {
			if err := stream.Send(cmd); err != nil {
				m.mu.Lock()
				for _, c := range batch[i:max(i, slots)] {
					// The pins and the drain state not sent are due
					// again, as they are now, unless newer ones are (a
					// pin or the drain changed, or the node registered
					// again, since).
					switch n := m.sched.Node(ns.id); {
					case isProtect(c) && ns.pins == nil:
						setPinsLocked(ns, m.protectedOn(ns.id))
					case isDrain(c) && ns.drain == nil && n != nil:
						setDrainLocked(ns, n.Draining)
					}
				}
				rest := batch[max(i, slots):]
				if n := m.sched.Node(ns.id); ns.regGen != reg && n != nil && n.NoOrigin {
					// The node registered again without an origin while
					// these were on their way (a Send held by a node that
					// stopped reading): dropped as the registration
					// dropped those still queued (dropPrefetchesLocked,
					// which gave up the prefetches' orders).
					rest, _ = m.dropNoOriginCmdsLocked(ns, slices.Clone(rest))
				}
				if ns.regGen != reg {
					m.putBackAfterRegistrationLocked(ns, rest)
				} else if rest = m.dropResentPrefetchCmdsLocked(ns, slices.Clone(rest)); len(rest) > 0 {
					ns.queue = append(rest, ns.queue...)
					ns.signal() // a newer stream's sender may be waiting already
				}
				m.mu.Unlock()
				return
			}
		}
	}
}

// unknownDiskFree is the free disk the manager counts for a node that
// reports it unknown (disk_free_bytes -1: no disk_bytes, and statfs
// failed), bytes: more than any title, so that no eviction is ordered to
// make room there (the node's store has no bound to keep either).
const unknownDiskFree = 1 << 60

// report applies one load report of ns from stream generation gen.
func (m *Manager) report(ns *nodeState, gen uint64, r *pb.LoadReport) error {
	if r.GetNodeId() != ns.id {
		return status.Errorf(codes.InvalidArgument, "report for node %q on the stream of node %q", r.GetNodeId(), ns.id)
	}
	now := m.now()
	print, titles := reportPrint(r) // before the lock: reportsteady.go
	var changed []*session
	m.mu.Lock()
	if ns.streamGen != gen {
		m.mu.Unlock()
		return status.Errorf(codes.Aborted, "heartbeat stream of node %q replaced by a newer one", ns.id)
	}
	ns.reports++
	sn := m.sched.Node(ns.id)
	// The bytes figures are one per session id, or none. Any other count
	// (a node's bug) is ignored, not the report: refusing it would end the
	// node's stream at every report and the node would be declared dead
	// for a field that only the records use.
	sent := r.GetSessionBytesSent()
	if nb, ni := len(sent), len(r.GetSessionIds()); nb != 0 && nb != ni {
		sent = nil
		if ns.badBytesGen != gen {
			ns.badBytesGen = gen
			m.log.Warn("node's load reports have a session_bytes_sent count other than their session_ids': its session_bytes_sent figures are ignored",
				"node", ns.id, "session_bytes_sent", nb, "session_ids", ni)
		}
	}
	if n, why := badStoredTitles(r.GetTitles()); n > 0 && ns.badTitlesGen != gen {
		ns.badTitlesGen = gen
		m.log.Warn("node's load reports list malformed stored titles: those are left out of its titles",
			"node", ns.id, "malformed", n, "first", why)
	}
	if sn != nil && !sn.Alive {
		m.log.Info("node back: its heartbeats arrive again", "node", ns.id)
	}
	// The node measures its free disk (quota and file system): it bounds
	// the room lsm counts for a fill there, with the titles it can evict.
	// -1: the node could not measure it (no disk_bytes, statfs failed):
	// its room is the budget's alone, as after its registration, and the
	// manager evicts nothing there to make room (unknownDiskFree).
	reported, known := r.GetDiskFreeBytes(), r.GetDiskFreeBytes() >= 0
	if !known {
		reported = unknownDiskFree
	}
	hb := lsm.Report{EgressBps: r.GetEgressBps(), DiskFreeBytes: reported, DiskFreeKnown: known, ActiveFills: int(r.GetActiveFills()), DiskFault: r.GetDiskFault()}
	steady := m.steadyLocked(ns, sn, print, r)
	var quiet bool
	catGen := m.catalogGen.Load()
	if steady {
		ns.replaceTitles(titles) // the session counts and access times of this report
	} else {
		quiet = m.quietLocked(ns) && len(r.GetFailedFills()) == 0
		hb.Titles, hb.DiskFreeBytes = m.syncTitlesLocked(ns, r.GetTitles(), r.GetFailedFills(), reported, now)
		hb.Partials = m.syncPartialsLocked(ns, r.GetPartials())
	}
	free := hb.DiskFreeBytes
	if !known {
		hb.DiskFreeBytes = -1 // shown as reported (vodctl nodes, metrics)
	}
	if err := m.sched.Heartbeat(ns.id, hb, now); err != nil {
		m.mu.Unlock()
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	if !steady {
		// Applied as it was (quiet before and after): the next report
		// saying the same is steady.
		ns.steady = steadyState{}
		if quiet && m.quietLocked(ns) && sn != nil {
			ns.steady = steadyState{print: print, epoch: sn.ViewEpoch(), gen: catGen}
		}
	}
	ns.reported, ns.diskFree, ns.diskUnknown = true, free, !known
	m.settleEvictOrdersLocked(ns, r.GetTitles())
	ns.shownFree = max(r.GetDiskFreeBytes(), -1)
	if r.GetDiskFault() != ns.diskFault {
		ns.diskFault = r.GetDiskFault()
		if ns.diskFault {
			m.log.Error("node cannot write its title cache (full, read only or failing disk): it serves what it holds, no fill is sent to it", "node", ns.id)
		} else {
			m.log.Info("node can write its title cache again: fills resume", "node", ns.id)
		}
	}
	ns.wakeReportWaiters()
	// A node declared dead whose stream stayed up (a stall longer than the
	// missed heartbeats) is alive again with this report: its orphaned
	// sessions get their reservations back, and this report, like the
	// first after Register, ends those it no longer plays.
	if ns.hasOrphans() {
		back, n := m.reserveOrphansLocked(ns)
		changed = append(changed, back...)
		ns.awaitFirst = ns.awaitFirst || n > 0
	}
	alive := make(map[string]bool, len(r.GetSessionIds()))
	var unknown []string
	for i, id := range r.GetSessionIds() {
		alive[id] = true
		if len(sent) > 0 {
			m.reportedBytesLocked(ns, id, sent[i])
		}
		if m.sessions[id] == nil && ns.endedAway[id] {
			unknown = append(unknown, id)
		}
		if s := ns.sessions[id]; s != nil && s.State == store.StateAdmitted {
			// Its STARTED event was lost: the node says it plays.
			s.State, s.StartedAt, s.playingAt = store.StatePlaying, reportTime(r, now), ns.reports // the node's clock, as a STARTED's
			// Not the node's time past the year 9999 (reportTime).
			if ms := r.GetAtUnixMs(); ms <= maxUnixMs {
				s.startedNodeMs = ms
			}
			changed = append(changed, s)
		}
	}
	ns.idle = idleSince(r.GetIdleSessions(), now)
	ns.quiet = idleSince(r.GetQuietSessions(), now)
	ns.paused, ns.finished = idSet(r.GetPausedSessions()), idSet(r.GetFinishedSessions())
	first := ns.awaitFirst
	ns.awaitFirst = false
	notOn := 0 // sessions ended as not on the node at its first report
	for _, s := range ns.sessions {
		switch {
		case s.State != store.StatePlaying:
		case alive[s.ID]:
			s.absent, s.heardUntil, s.storedHeard, s.idleSince = 0, time.Time{}, time.Time{}, time.Time{}
		case s.startedNodeMs != 0 && r.GetAtUnixMs() <= s.startedNodeMs:
			// The report was taken before the node started the session
			// (by the node's clock): reports queue behind a slow store
			// write, and arrive after the STARTED sent beside them.
		case first:
			restartEnd(s, ns.processStart, r, now)
			if _, ok := m.endedRefused[s.ID]; ok || sameProcess(ns.processStart, s) {
				// Its ENDED was refused before the registration, or the
				// node's process that played it is the one registered,
				// which queued the ENDED while no manager answered: the
				// node sends it after this report, which may overtake it.
				delete(m.endedRefused, s.ID)
				s.awaitEnded = true
			}
			m.endLocked(s, "not on its node after the node registered")
			changed = append(changed, s)
			notOn++
		case s.playingAt+1 < ns.reports:
			// Playing here before the previous report was applied, and
			// started before this report was taken: its ENDED was lost
			// (a node drops events it cannot send). Two such reports in
			// a row end it: one may race a STARTED.
			if s.absent++; s.absent >= 2 {
				m.endLocked(s, "not on its node for two load reports (its ENDED was lost)")
				changed = append(changed, s)
			}
		}
	}
	if notOn > 0 {
		m.log.Info("node's first report since it registered or came back: sessions restored on it that it does not play ended", "node", ns.id,
			"sessions_ended", notOn, "sessions_kept", len(ns.sessions))
	}
	for id := range ns.endedAway {
		if !alive[id] {
			delete(ns.endedAway, id) // the node does not play it
		}
	}
	m.endUnknownLocked(ns, unknown)
	m.mu.Unlock()
	m.persistLater(changed) // not waiting for the store: the node's next report would
	m.kickPump()
	return nil
}

// reportedBytesLocked keeps b, the bytes session id has sent so far as a
// load report of ns says, for the session's record should its ENDED
// never come (mu held): on the session while it lives on ns, else on its
// record held for that ENDED (recordEndedLocked). A session whose ENDED
// came keeps the ENDED's count.
func (m *Manager) reportedBytesLocked(ns *nodeState, id string, b uint64) {
	n := int64(min(b, math.MaxInt64))
	if s := ns.sessions[id]; s != nil {
		if !s.bytesReported {
			s.bytesSent, s.bytesAsOfReport = n, true
		}
		return
	}
	if m.sessions[id] != nil {
		return // on another node (this one's report raced its move)
	}
	if h, ok := m.heldRecords[id]; ok && h.rec.Node == ns.id && !h.rec.StartedAt.IsZero() && (h.rec.BytesSentUnknown || h.rec.BytesSentAsOfReport) {
		h.rec.BytesSent, h.rec.BytesSentAsOfReport, h.rec.BytesSentUnknown = n, true, false
		m.heldRecords[id] = h
	}
}

// endUnknownResend is how many load reports a session the manager told
// its node to end may still be listed before it is told again.
const endUnknownResend = 10

// endUnknownLocked tells ns to end the sessions of its report that this
// manager ended (mu held): it ended them while the node was cut off beyond
// RestoreGrace, and their reservations are gone, so the node's egress
// would be spent on viewers the scheduler no longer counts, and it would
// refuse the ones sent to it. Sessions it never held (another manager's)
// are left alone. Each is told at its second listing in a row (the first
// may race its ENDED), again if still listed endUnknownResend reports
// later.
func (m *Manager) endUnknownLocked(ns *nodeState, unknown []string) {
	if len(unknown) == 0 {
		clear(ns.unknownEnded)
		return
	}
	if ns.unknownEnded == nil {
		ns.unknownEnded = map[string]*[2]uint64{}
	}
	var tell []string
	listed := make(map[string]bool, len(unknown))
	for _, id := range unknown {
		listed[id] = true
		at := ns.unknownEnded[id]
		switch {
		case at == nil:
			// The first listing may be a report taken before the node
			// sent the session's ENDED: wait for the next.
			ns.unknownEnded[id] = &[2]uint64{ns.reports, 0}
		case at[1] == 0 || ns.reports >= at[1]+endUnknownResend:
			at[1] = ns.reports
			tell = append(tell, id)
		}
	}
	for id := range ns.unknownEnded {
		if !listed[id] {
			delete(ns.unknownEnded, id)
		}
	}
	if len(tell) == 0 {
		return
	}
	m.log.Warn("node plays sessions the manager ended (while the node was cut off): told to end them",
		"node", ns.id, "sessions", len(tell))
	ns.push(&pb.NodeCommand{Command: &pb.NodeCommand_EndSessions{EndSessions: &pb.EndSessionsCommand{
		SessionIds: tell, Reason: "ended by the manager while the node was cut off (beyond restore_grace, or the node forgotten)"}}})
}

// streamBroke takes ns out of service until its next report when its
// heartbeat stream gen broke while current (not replaced by a newer one,
// not the manager closing).
func (m *Manager) streamBroke(ns *nodeState, gen uint64, err error) {
	if m.ctx.Err() != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if ns.streamGen != gen {
		return
	}
	if m.sched.SetUnreachable(ns.id) == nil {
		m.log.Warn("node heartbeat stream broke: no new sessions to it until it reports again", "node", ns.id, "err", err)
	}
}
