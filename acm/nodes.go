package acm

import (
	"context"
	"maps"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// cmdQueue is how many commands may wait for a node's heartbeat stream.
const cmdQueue = 256

// nodeState is the manager's side of one registered node: the commands
// waiting for its heartbeat stream, its last load report, and its
// sessions. Guarded by Manager.mu, except wake (a channel). The maps
// titles, active and hits are read by a plan in progress without mu
// (share): they are changed only through the methods below, which copy a
// shared map before changing it (copy on write).
type nodeState struct {
	id    string
	queue []*pb.NodeCommand // commands not yet sent, oldest first
	// pins: the ProtectCommand of the node's pins as they are, due and not
	// yet taken by its stream's sender; nil when none is due. Kept out of
	// queue, whose bound (cmdQueue) would otherwise refuse it, and sent
	// before the queued commands: only the latest pin set waits
	// (sendProtectLocked).
	pins *pb.NodeCommand
	// drain: the DrainCommand of the node's drain state as it is, due and
	// not yet taken by its stream's sender; nil when none is due. Kept
	// out of queue as pins are, and sent after them, before the queued
	// commands: only the latest drain state waits (setDrainLocked).
	drain *pb.NodeCommand
	wake  chan struct{} // signalled (capacity 1) when queue, pins or drain gain commands

	streamGen    uint64             // generation of the current heartbeat stream
	streamCancel context.CancelFunc // ends the current stream's command sender
	regGen       uint64             // registrations: a sender's batch taken before the latest one predates it
	awaitFirst   bool               // the next report is the first since Register
	// heardBefore is when the node was last heard of before the
	// registration it sent no report since (awaitFirst), when it was alive
	// then (it registered again before it missed its heartbeats: its
	// sessions kept their reservations); zero when it was not. Its
	// sessions were heard of then, not at the registration.
	heardBefore time.Time
	// processStart is when the node's process started, on its clock, as
	// its last Register said (RegisterRequest.started_at_unix_ms); zero:
	// unknown.
	processStart time.Time

	reports     uint64                     // load reports received
	reported    bool                       // Register or a load report gave the free disk
	diskFault   bool                       // the last report said the node cannot write its title cache
	diskFree    int64                      // bytes, last report minus fills ordered since
	diskUnknown bool                       // the last report gave the free disk unknown (-1): diskFree counts unknownDiskFree
	titles      map[string]*pb.StoredTitle // last report, adjusted by commands since
	sessions    map[string]*session        // live sessions placed on the node
	active      map[string]int             // title -> live sessions of it on the node
	// shownFree is the free disk as the node gave it, bytes: its last load
	// report's disk_free_bytes (-1: unknown), or its budget's room after
	// its registration. vodctl nodes and vodcluster_node_disk_free_bytes
	// show it; diskFree, which takes off the fills booked since, can be
	// below 0 until the evictions that make their room are reported.
	shownFree int64
	// titlesShared, activeShared, hitsShared: the map is read by a plan
	// in progress (share), copied before it changes.
	titlesShared, activeShared, hitsShared bool

	pending  map[string]*pendingFill // prefetches ordered, not yet in a load report
	filling  map[string]bool         // titles filling in the last report -> ordered ahead of demand
	awaiting map[string]bool         // fills on demand placed here whose viewer has not reached the node yet
	evicting map[string]uint64       // titles ordered evicted -> reports received at the order
	// stale: complete copies of another version (or size) than the
	// catalog's, by title (staleLocked).
	stale map[string]*staleCopySeen
	// withdrawn: copies of titles not in the catalog, by title
	// (withdrawnLocked).
	withdrawn map[string]*withdrawnSeen
	// withdrawnMost: most of the last report's copies were of titles not
	// in the catalog (logged once; withdrawnLocked evicts none then).
	withdrawnMost bool
	// steady: the last report applied in full, to tell a steady one
	// (reportsteady.go).
	steady steadyState
	hits   map[string]float64 // title -> requests placed on the node since it was stored
	// partials: the last report's partials (fills cut short, kept to
	// resume) by title; replaced whole, never changed in place
	// (syncPartialsLocked), so a plan reads it without mu. nil when none.
	partials map[string]*pb.PartialTitle
	// reportedPartials: every well-formed partial of the last report, those
	// of a size not the catalog's included (stale), for the operator's
	// listing and eviction; replaced whole too. nil when none.
	reportedPartials map[string]*pb.PartialTitle
	// evictingPartials: partials ordered removed -> reports received at
	// the order; a report sent before the node had the order still lists
	// them.
	evictingPartials map[string]uint64

	// httpTLS: its HTTP address speaks HTTPS (RegisterRequest.http_tls).
	httpTLS bool
	// rtspsAddr: its RTSPS address (RegisterRequest.rtsps_addr), "" = none.
	rtspsAddr string

	// endedAway: sessions of the node this manager ended because the node
	// did not come back within RestoreGrace, or because the operator
	// forgot the node (Manager.forgotEnded); the node may still play them
	// (cut off, not dead): told to end them when it lists them
	// (endUnknownLocked), forgotten when a report does not list them.
	endedAway map[string]bool
	// unknownEnded: of those, the ones the node listed -> the report
	// counts when first listed and when last told to end.
	unknownEnded map[string]*[2]uint64
	// badBytesGen: the heartbeat stream generation whose reports were
	// last logged as having a session_bytes_sent of the wrong count (the
	// warning goes once a stream; the figures are ignored each time).
	badBytesGen uint64
	// badTitlesGen: likewise for reports listing malformed stored titles
	// (storedTitleFault), which are left out each time.
	badTitlesGen uint64
	// idle: the idle sessions of its last report (LoadReport.idle_sessions:
	// HTTP sessions whose viewer asked nothing for longer than the node's
	// session timeout) -> since when, by the manager's clock; nil when
	// none. A new request of their subscriber at the session limit
	// supersedes the one idle longest (supersede.go).
	idle map[string]time.Time
	// quiet: the HTTP sessions its last report listed with no request in
	// progress, their last within the node's session timeout
	// (LoadReport.quiet_sessions) -> since when, by the manager's clock;
	// nil when none (supersede.go).
	quiet map[string]time.Time
	// paused, finished: the sessions of its last report its RTSP clients
	// PAUSEd, and those whose play reached the end of the title
	// (LoadReport.paused_sessions, finished_sessions), shown so by
	// ListSessions; nil when none (an older node sends neither).
	paused, finished map[string]bool
	// admissions, noShows: the new sessions admitted to the node, and
	// those of them ended as no-shows (mu), exported as
	// vodcluster_node_admissions_total and vodcluster_node_no_shows_total
	// with its other series (metricsCollector): a forgotten node's go
	// with it.
	admissions, noShows uint64

	protected []string      // the titles of the last ProtectCommand, due (pins) or sent, sorted
	reportCh  chan struct{} // closed at the next load report (reportWaiter)
}

// reportWaiter returns a channel closed when the node's next load report
// has been applied (mu held).
func (ns *nodeState) reportWaiter() <-chan struct{} {
	if ns.reportCh == nil {
		ns.reportCh = make(chan struct{})
	}
	return ns.reportCh
}

// wakeReportWaiters wakes the reportWaiters (mu held).
func (ns *nodeState) wakeReportWaiters() {
	if ns.reportCh != nil {
		close(ns.reportCh)
		ns.reportCh = nil
	}
}

// pendingFill is a prefetch ordered on a node that no load report has
// shown yet.
type pendingFill struct {
	at    time.Time // ordered
	bytes int64     // the title's size
	// partial: bytes of the title's partial on the node at the order (its
	// last report's), 0 when none: a registration listing more shows the
	// node wrote to it since, whatever the clocks say (lostPrefetchesLocked).
	partial int64
	// cmd: the PrefetchCommand last queued for the order; a copy of
	// before it that a stream's sender could not send is not put back
	// (dropResentPrefetchCmdsLocked).
	cmd *pb.NodeCommand
}

// partialOf is the stored bytes of ns's partial of title in its last
// report (any size), 0 when none (mu held).
func (ns *nodeState) partialOf(title string) int64 {
	return ns.reportedPartials[title].GetStoredBytes()
}

func newNodeState(id string) *nodeState {
	return &nodeState{
		id:        id,
		wake:      make(chan struct{}, 1),
		titles:    map[string]*pb.StoredTitle{},
		sessions:  map[string]*session{},
		active:    map[string]int{},
		pending:   map[string]*pendingFill{},
		filling:   map[string]bool{},
		awaiting:  map[string]bool{},
		evicting:  map[string]uint64{},
		hits:      map[string]float64{},
		stale:     map[string]*staleCopySeen{},
		withdrawn: map[string]*withdrawnSeen{},
		endedAway: map[string]bool{},
	}
}

func (ns *nodeState) addSession(s *session) {
	if _, ok := ns.sessions[s.ID]; ok {
		return
	}
	ns.sessions[s.ID] = s
	ownMap(&ns.active, &ns.activeShared)
	ns.active[s.Title]++
}

func (ns *nodeState) removeSession(s *session) {
	if _, ok := ns.sessions[s.ID]; !ok {
		return
	}
	delete(ns.sessions, s.ID)
	ownMap(&ns.active, &ns.activeShared)
	if ns.active[s.Title]--; ns.active[s.Title] <= 0 {
		delete(ns.active, s.Title)
	}
}

// share marks titles, active and hits as read by a plan in progress
// without mu: each is copied before its next change, until unshare.
func (ns *nodeState) share() {
	ns.titlesShared, ns.activeShared, ns.hitsShared = true, true, true
}

// unshare ends share: the plan no longer reads the maps.
func (ns *nodeState) unshare() {
	ns.titlesShared, ns.activeShared, ns.hitsShared = false, false, false
}

// ownMap makes *m the node's own to change: a copy when *shared.
func ownMap[V any](m *map[string]V, shared *bool) {
	if *shared {
		c := make(map[string]V, len(*m)+1)
		maps.Copy(c, *m)
		*m, *shared = c, false
	}
}

// setTitle sets title id's entry in titles.
func (ns *nodeState) setTitle(id string, st *pb.StoredTitle) {
	ownMap(&ns.titles, &ns.titlesShared)
	ns.titles[id] = st
}

// dropTitle removes title id from titles and its hits.
func (ns *nodeState) dropTitle(id string) {
	ownMap(&ns.titles, &ns.titlesShared)
	delete(ns.titles, id)
	ns.dropHit(id)
}

// replaceTitles makes cur, a new map, the node's titles.
func (ns *nodeState) replaceTitles(cur map[string]*pb.StoredTitle) {
	ns.titles, ns.titlesShared = cur, false
}

// addHit counts one request for title id placed on the node.
func (ns *nodeState) addHit(id string) {
	ownMap(&ns.hits, &ns.hitsShared)
	ns.hits[id]++
}

// dropHit forgets the hits of title id.
func (ns *nodeState) dropHit(id string) {
	if _, ok := ns.hits[id]; !ok {
		return
	}
	ownMap(&ns.hits, &ns.hitsShared)
	delete(ns.hits, id)
}

// sessionList returns the node's sessions (a copy: ending them edits the map).
// hasOrphans reports whether a session of the node has no reservation.
func (ns *nodeState) hasOrphans() bool {
	for _, s := range ns.sessions {
		if !s.reserved {
			return true
		}
	}
	return false
}

func (ns *nodeState) sessionList() []*session {
	out := make([]*session, 0, len(ns.sessions))
	for _, s := range ns.sessions {
		out = append(out, s)
	}
	return out
}

// push queues cmd for the node's heartbeat stream; false when cmdQueue
// commands already wait. Manager.mu held.
func (ns *nodeState) push(cmd *pb.NodeCommand) bool {
	if len(ns.queue) >= cmdQueue {
		return false
	}
	ns.queue = append(ns.queue, cmd)
	ns.signal()
	return true
}

// signal wakes the stream's sender.
func (ns *nodeState) signal() {
	select {
	case ns.wake <- struct{}{}:
	default:
	}
}

// stopStream ends the current heartbeat stream's command sender.
func (ns *nodeState) stopStream() {
	if ns.streamCancel != nil {
		ns.streamCancel()
		ns.streamCancel = nil
	}
}

// evictCmd orders the eviction of title for reason (pb.EvictCommand's
// reasons: evictOperator, evictPlanner, evictRoom, evictStale,
// evictWithdrawn).
func evictCmd(title, reason string) *pb.NodeCommand {
	return &pb.NodeCommand{Command: &pb.NodeCommand_Evict{Evict: &pb.EvictCommand{TitleId: title, Reason: reason}}}
}

// The reasons of an EvictCommand (pb.EvictCommand.reason).
const (
	evictOperator  = "operator"  // Admin.Evict
	evictPlanner   = "planner"   // the replica plan
	evictRoom      = "room"      // room for a fill or a prefetch
	evictStale     = "stale"     // a copy of a version the origin no longer serves
	evictWithdrawn = "withdrawn" // a copy of a title withdrawn at the origin (withdrawnLocked)
)

func prefetchCmd(title string) *pb.NodeCommand {
	return &pb.NodeCommand{Command: &pb.NodeCommand_Prefetch{Prefetch: &pb.PrefetchCommand{TitleId: title}}}
}

func protectCmd(titles []string) *pb.NodeCommand {
	return &pb.NodeCommand{Command: &pb.NodeCommand_Protect{Protect: &pb.ProtectCommand{TitleIds: titles}}}
}

func drainCmd(d bool) *pb.NodeCommand {
	return &pb.NodeCommand{Command: &pb.NodeCommand_Drain{Drain: &pb.DrainCommand{Drain: d}}}
}

// setDrainLocked makes the DrainCommand of draining (the node's drain
// state as it is) the one ns's stream sends next after its pins, before
// its queued commands, in place of one not yet sent: never refused for a
// full queue, and never followed by an older state (mu held).
func setDrainLocked(ns *nodeState, draining bool) {
	ns.drain = drainCmd(draining)
	ns.signal()
}

// isDrain reports whether c is a DrainCommand.
func isDrain(c *pb.NodeCommand) bool { return c.GetDrain() != nil }
