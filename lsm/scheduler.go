package lsm

import (
	"fmt"
	"math"
	"time"
)

// Scheduler is the node registry, the reservation ledger, the replica view
// and the policy. It is not safe for concurrent use.
type Scheduler struct {
	Config Config
	Nodes  []*Node // every node registered and not removed (RemoveNode), by Index

	byID   map[string]*Node
	policy Policy
	queue  queue

	now       time.Time // the latest time any call passed in
	firstJoin time.Time // when the first node joined (start of the cluster)
	version   uint64    // bumped when a node's in-service state, weight or capacity changes

	holders map[string][]int32 // title -> indexes of nodes holding or filling it
	// partialAt: title -> nodes with a partial of it (Report.Partials).
	partialAt map[string][]*Node
	fills     fillTree   // per node: the default policy's cost of a fill there
	filling   int        // replicas filling in the replica view, all nodes
	spare     []*replica // dropped replica records, for reuse

	meanE        float64 // mean weighted capacity of the nodes in service, bit/s
	meanEVersion uint64  // version meanE was computed at, +1 (0: never)

	anomalies Anomalies
}

// Anomalies counts ledger events that break the bookkeeping's invariants.
// They are the caller's bugs or operator events, never the policies': the
// scheduler carries on (counters stop at zero, a reservation stays booked)
// and reports them here so that tests, the simulator and the admin API
// can see them.
type Anomalies struct {
	// UnbalancedReleases counts Release calls the ledger could not match:
	// a node index out of range, or a node with fewer reserved bit/s or
	// sessions than the release returns (a reservation released twice).
	UnbalancedReleases int64
	// OverCapacity counts the times a node's reserved bit/s went above its
	// egress capacity: by Reserve, which books without the admission rule
	// to rebuild a ledger, or by a node registering again with less
	// capacity than it has reserved.
	OverCapacity int64
}

// Anomalies returns the counts since the scheduler was made.
func (s *Scheduler) Anomalies() Anomalies { return s.anomalies }

// Filling returns the number of fills in progress in the replica view,
// on all nodes: demand fills booked by Place or Reserve and fills the
// callers recorded (SetReplica, Heartbeat), until they complete or are
// dropped.
func (s *Scheduler) Filling() int { return s.filling }

// New returns a scheduler with cfg; it fails on an unknown policy name or
// parameters out of range (Config.Validate).
func New(cfg Config) (*Scheduler, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p, err := NewPolicy(cfg.Policy, cfg)
	if err != nil {
		return nil, err
	}
	return &Scheduler{Config: cfg, byID: map[string]*Node{}, policy: p, holders: map[string][]int32{}}, nil
}

// Policy returns the current policy.
func (s *Scheduler) Policy() Policy { return s.policy }

// SetPolicy switches to the policy called name, built fresh (a stateful
// policy starts with empty tables). Reservations stay as they are: no
// session is dropped or moved. Unknown names are an error and change
// nothing.
func (s *Scheduler) SetPolicy(name string) error {
	p, err := NewPolicy(name, s.Config)
	if err != nil {
		return err
	}
	s.policy = p
	s.Config.Policy = name
	return nil
}

// Now returns the latest time passed to any call of the scheduler.
func (s *Scheduler) Now() time.Time { return s.now }

// Version returns a counter that changes whenever a node joins, dies,
// drains, changes weight or capacity, or is removed: policies with tables built over
// the nodes in service (dh, sh, mh, chbl) rebuild them when it moves.
func (s *Scheduler) Version() uint64 { return s.version }

func (s *Scheduler) advance(now time.Time) {
	if now.After(s.now) {
		s.now = now
	}
}

// Node returns the node with id, or nil.
func (s *Scheduler) Node(id string) *Node { return s.byID[id] }

// AddNode registers a node, or updates a known one (a node that restarts
// registers again): it becomes alive, and slow-starts when it was not alive
// before or its process is another than the one registered before
// (NodeSpec.Started), unless it joins with the cluster (Config.SlowStart). It fails
// on an empty id, an egress capacity <= 0 bit/s or a weight above
// MaxWeight. A weight the operator
// set with SetWeight is kept over the one the node announces. A node that
// comes back with less egress capacity than it has reserved keeps its
// reservations (its sessions play on) and gets no new session until they
// fit again; Anomalies counts it.
func (s *Scheduler) AddNode(spec NodeSpec, now time.Time) (*Node, error) {
	if spec.ID == "" {
		return nil, fmt.Errorf("lsm: node without id")
	}
	if spec.Capacity.EgressBps <= 0 {
		return nil, fmt.Errorf("lsm: node %s: egress capacity must be > 0 bit/s", spec.ID)
	}
	if spec.Capacity.MaxSessions < 0 || spec.Capacity.DiskBytes < 0 {
		return nil, fmt.Errorf("lsm: node %s: negative session or disk limit", spec.ID)
	}
	if spec.Weight > MaxWeight {
		return nil, fmt.Errorf("lsm: node %s: weight %d above %d", spec.ID, spec.Weight, MaxWeight)
	}
	if spec.Weight <= 0 {
		spec.Weight = DefaultWeight
	}
	s.advance(now)
	n := s.byID[spec.ID]
	if n == nil {
		n = &Node{Index: len(s.Nodes), titles: map[string]*replica{}}
		s.Nodes = append(s.Nodes, n)
		s.byID[spec.ID] = n
		s.fills.reset(len(s.Nodes))
		for _, m := range s.Nodes[:len(s.Nodes)-1] {
			s.touch(m)
		}
	}
	if n.operatorWeight {
		spec.Weight = n.Weight // the operator's setting outlives a node restart
	}
	over := n.ReservedBps > n.Capacity.EgressBps
	restarted := n.Alive && !n.Started.IsZero() && !spec.Started.IsZero() && !spec.Started.Equal(n.Started)
	n.NodeSpec = spec
	if !over && n.ReservedBps > n.Capacity.EgressBps {
		s.anomalies.OverCapacity++
	}
	if !n.Alive || restarted {
		s.revive(n, now)
	}
	n.LastHeartbeat = now
	s.version++
	s.touch(n)
	return n, nil
}

// revive marks n alive at now and starts its slow start.
func (s *Scheduler) revive(n *Node, now time.Time) {
	n.Alive = true
	n.JoinedAt = now
	n.SlowUntil = time.Time{}
	if s.firstJoin.IsZero() {
		s.firstJoin = now
	}
	if w := s.Config.SlowStart; w > 0 && now.Sub(s.firstJoin) > w {
		n.SlowUntil = now.Add(w)
	}
	s.version++
}

// Report is the part of a node's load report the scheduler uses.
type Report struct {
	EgressBps int64 // bit/s measured over the last interval
	// DiskFreeBytes is the node's free disk, bytes: what it can write
	// without evicting anything, within its budget and its file system's
	// free space, less the fills in Titles it has still to write. Used for
	// disk room only with DiskFreeKnown.
	DiskFreeBytes int64
	// DiskFreeKnown: DiskFreeBytes is the node's own measure (a load
	// report), and bounds the room for a new fill (the free disk plus the
	// titles it could evict) as the budget does; false: the room is the
	// budget's alone (Capacity.DiskBytes less the titles in use).
	DiskFreeKnown bool
	ActiveFills   int       // origin transfers in progress
	Titles        []Holding // every title on the node; nil leaves the replica view as it is
	// Partials are the partly filled titles the node keeps to resume
	// their fills (partial.go), replaced with Titles: ignored when Titles
	// is nil.
	Partials []Partial
	// DiskFault: the node cannot write its title cache (Node.DiskFault).
	DiskFault bool
}

// Holding is one title on a node.
type Holding struct {
	Title   string
	Bytes   int64 // bytes stored
	Filling bool  // a fill is in progress
	Pinned  bool  // pinned to the node or the cluster: the node never evicts it
	// Stale: the copy is of a version of the title the origin no longer
	// serves (its file was replaced there). The node takes no new session
	// of the title (Scheduler.Eligible), unless the origin is unavailable
	// (Request.NoFill) or no node can take the session with a fill
	// (Scheduler.Place), until the copy is evicted and filled again. A
	// fill may be stale too (a fill of the old version, begun before the
	// file was replaced): its viewers play on, new ones go elsewhere.
	Stale bool
	// Booked: a fill the manager booked (a viewer placed there who has
	// not reached the node, a prefetch ordered) that the node's own
	// report does not show yet: it cannot start while the origin is down
	// (Request.OriginDown). Only with Filling.
	Booked bool
	// Preemptible: a prefetch in progress no viewer plays, is on its way
	// for or pins, which the node stops (keeping its bytes as a partial
	// while there is room) to make room for a fill on demand: its bytes
	// count as room for a viewer's fill (Place), not as in use. Only with
	// Filling.
	Preemptible bool
}

// Heartbeat records a load report from node id. A dead node that reports
// again is alive, and slow-starts. It fails with ErrUnknownNode.
func (s *Scheduler) Heartbeat(id string, r Report, now time.Time) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	s.advance(now)
	if !n.Alive {
		s.revive(n, now)
	}
	n.LastHeartbeat = now
	if n.Unreachable {
		n.Unreachable = false
		s.version++ // back in service: the hash policies rebuild their tables
	}
	n.EgressBps = max(0, r.EgressBps)
	n.DiskFreeBytes = r.DiskFreeBytes
	n.ActiveFills = r.ActiveFills
	n.DiskFault = r.DiskFault
	if r.Titles != nil {
		seen := make(map[string]struct{}, len(r.Titles))
		for _, h := range r.Titles {
			if h.Title == "" {
				continue
			}
			seen[h.Title] = struct{}{}
			s.setReplica(n, h.Title, h.Filling, h.Bytes)
			n.titles[h.Title].booked = h.Filling && h.Booked
			s.setPinned(n, h.Title, h.Pinned)
			s.setPreemptible(n, h.Title, h.Filling && h.Preemptible)
			s.setStale(n, h.Title, h.Stale)
		}
		for t := range n.titles {
			if _, ok := seen[t]; !ok {
				s.dropReplica(n, t)
			}
		}
		s.setPartials(n, r.Partials)
	}
	n.diskKnown, n.diskHolds = r.DiskFreeKnown, r.DiskFreeBytes+n.StoredBytes
	s.touch(n)
	return nil
}

// SetReplica records that node id holds (filling false) or is filling
// title of bytes bytes; the SMM calls it when it orders a prefetch, a node
// when a fill completes. It fails with ErrUnknownNode or ErrBadRequest for
// an empty title.
func (s *Scheduler) SetReplica(id, title string, filling bool, bytes int64) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	if title == "" {
		return ErrBadRequest
	}
	s.setReplica(n, title, filling, bytes)
	s.touch(n)
	return nil
}

// SetPinned records whether title, held or filling on node id, is pinned
// there (to the node or to the cluster): a pinned title's bytes are not
// room for a fill (Node.InUseBytes). A report's Holding.Pinned sets it
// too. Nothing happens when the node has no such title. It fails with
// ErrUnknownNode.
func (s *Scheduler) SetPinned(id, title string, pinned bool) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	s.setPinned(n, title, pinned)
	s.touch(n)
	return nil
}

// SetStale records whether the copy (or fill) of title on node id is of
// a version the origin no longer serves (Holding.Stale), between two load
// reports: the manager marks it as soon as a catalog read shows the
// title replaced, rather than at the node's next report. Nothing happens
// when the node holds no such title. It fails with ErrUnknownNode.
func (s *Scheduler) SetStale(id, title string, stale bool) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	s.setStale(n, title, stale)
	s.touch(n)
	return nil
}

// DropReplica records that node id no longer holds title (evicted, or a
// fill given up). It fails with ErrUnknownNode.
func (s *Scheduler) DropReplica(id, title string) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	s.dropReplica(n, title)
	s.touch(n)
	return nil
}

// Holders returns the indexes of the nodes that hold or are filling
// title, in no particular order. The slice belongs to the scheduler: read
// it, do not keep or change it.
func (s *Scheduler) Holders(title string) []int32 { return s.holders[title] }

// Tick marks dead every alive node whose last heartbeat is older than
// MissedHeartbeats intervals, and returns them. Dead nodes get no new
// sessions; what to do with their sessions is the caller's business (the
// ACM ends them and calls Release).
func (s *Scheduler) Tick(now time.Time) []*Node {
	s.advance(now)
	var dead []*Node
	limit := time.Duration(s.Config.MissedHeartbeats) * s.Config.HeartbeatInterval
	for _, n := range s.Nodes {
		if n.Alive && now.Sub(n.LastHeartbeat) > limit {
			n.Alive = false
			s.version++
			s.touch(n)
			dead = append(dead, n)
		}
	}
	return dead
}

// MarkDead takes node id out of service at once (its heartbeat stream
// broke, say). Unknown ids are ignored.
func (s *Scheduler) MarkDead(id string) {
	if n := s.byID[id]; n != nil && n.Alive {
		n.Alive = false
		s.version++
		s.touch(n)
	}
}

// SetWeight sets node id's weight; 0 drains it. The setting outlives the
// node's re-registrations. It fails with
// ErrUnknownNode or for a weight out of 0..MaxWeight.
func (s *Scheduler) SetWeight(id string, w int) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	if w < 0 || w > MaxWeight {
		return fmt.Errorf("lsm: weight %d out of 0..%d", w, MaxWeight)
	}
	n.Weight = w
	n.operatorWeight = true
	s.version++
	s.touch(n)
	return nil
}

// SetDraining sets or clears node id's drain flag: a draining node gets no
// new sessions and keeps the ones it plays. It fails with ErrUnknownNode.
func (s *Scheduler) SetDraining(id string, d bool) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	n.Draining = d
	s.version++
	s.touch(n)
	return nil
}

// SetOverload sets node id's own overload threshold (utilization in
// (0, 1]), the upper threshold of Linux IPVS: above it the node is flagged
// overloaded (Node.OverloadFlag) and no policy gives it a new session
// until its utilization falls below Config.OverloadLower times the
// threshold. 0 removes it: the node is then only subject to
// Config.Overload, the locality policies' test of a title's holders. It
// fails with ErrUnknownNode or for a threshold out of range. The manager
// refuses an operator's threshold below Config.Normal (acm, SetNode).
func (s *Scheduler) SetOverload(id string, th float64) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	if th < 0 || th > 1 || math.IsNaN(th) {
		return fmt.Errorf("lsm: overload threshold %v out of [0, 1] (0: none)", th)
	}
	n.Overload = th
	s.touch(n)
	return nil
}

// meanWeightedBps returns the mean of E (capacity times Weight/100, bit/s)
// over the nodes in service, recomputed when Version moves; 1 when none.
func (s *Scheduler) meanWeightedBps() float64 {
	if s.meanEVersion == s.version+1 {
		return s.meanE
	}
	sum, k := 0.0, 0
	for _, n := range s.Nodes {
		if s.InService(n) {
			sum += weightedBps(n)
			k++
		}
	}
	s.meanE, s.meanEVersion = 1, s.version+1
	if k > 0 {
		s.meanE = sum / float64(k)
	}
	return s.meanE
}

// SetUnreachable takes node id out of service until its next Heartbeat
// (Node.Unreachable): its heartbeat stream broke, and a node that crashed
// would otherwise be sent viewers until its heartbeats are missed
// (MissedHeartbeats intervals). Its reservations stay. Errors:
// ErrUnknownNode.
func (s *Scheduler) SetUnreachable(id string) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	if !n.Unreachable {
		n.Unreachable = true
		s.version++ // out of service: the hash policies rebuild their tables
	}
	s.touch(n)
	return nil
}
