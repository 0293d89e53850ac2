package smm

import (
	"fmt"
	"time"
)

// Planner names for StorageConfig.Planner.
const (
	PlannerReplicate = "replicate" // the Replicator
	PlannerNone      = "none"      // NoPlanner: fills on demand only
)

// StorageConfig selects and tunes a storage policy.
type StorageConfig struct {
	// Planner is PlannerReplicate or PlannerNone; "" takes the policy's
	// default: the Replicator for gdsf, none for the others (the
	// baselines of the literature cache on demand only).
	Planner string
	// Replicator tunes the Replicator (zero fields: defaults).
	Replicator ReplicatorConfig
	// Pins are the operator's pins (nil: none).
	Pins *Pins
}

// Storage is a storage policy as a whole: a Planner and the Evictor of
// every node's disk, chosen together by name, sharing what they know.
// With the Replicator, each node's Evictor ranks the titles the plan does
// not place on that node first, never evicts pinned titles, and ranks by
// gdsf priority on the cluster-wide request rate, divided among the
// title's copies. Not safe for concurrent use.
type Storage struct {
	// Name is the storage policy's name: the eviction policy's.
	Name string
	// Planner is the planner to call (Observe on every request, Plan
	// periodically); NoPlanner when the policy caches on demand only.
	Planner Planner
	// Replicator is the Planner when it is one, else nil.
	Replicator *Replicator

	pins    *Pins
	evictor string
	nodes   map[string]Evictor
}

// StoragePolicies returns the storage policy names: the eviction
// policies', sorted.
func StoragePolicies() []string { return Evictors() }

// NewStorage returns the storage policy called name ("" = DefaultEvictor).
// It fails on an unknown name or planner, or a Replicator parameter out of
// range.
func NewStorage(name string, cfg StorageConfig) (*Storage, error) {
	if name == "" {
		name = DefaultEvictor
	}
	if _, err := NewEvictor(name); err != nil {
		return nil, err
	}
	pl := cfg.Planner
	if pl == "" {
		pl = PlannerNone
		if name == DefaultEvictor {
			pl = PlannerReplicate
		}
	}
	pins := cfg.Pins
	if pins == nil {
		pins = &Pins{}
	}
	s := &Storage{Name: name, evictor: name, pins: pins, nodes: map[string]Evictor{}, Planner: NoPlanner{}}
	switch pl {
	case PlannerNone:
	case PlannerReplicate:
		r, err := NewReplicator(cfg.Replicator, pins)
		if err != nil {
			return nil, err
		}
		s.Planner, s.Replicator = r, r
	default:
		return nil, fmt.Errorf("smm: unknown planner %q (known: %s, %s)", pl, PlannerReplicate, PlannerNone)
	}
	return s, nil
}

// Pins returns the operator's pins the policy honours.
func (s *Storage) Pins() *Pins { return s.pins }

// Evictor returns the Evictor of node's disk, the same instance on every
// call for one node.
func (s *Storage) Evictor(node string) Evictor {
	if ev := s.nodes[node]; ev != nil {
		return ev
	}
	base, _ := NewEvictor(s.evictor)
	if g, ok := base.(*GDSF); ok && s.Replicator != nil {
		g.SetupBytes = s.Replicator.cfg.SetupBytes
		g.Frequency = s.Replicator.Value
	}
	ev := &nodeEvictor{base: base, node: node, pins: s.pins, rep: s.Replicator}
	s.nodes[node] = ev
	return ev
}

// ForgetNode forgets node at now: the operator decommissioned it. Its
// Evictor's state goes (a node registering later under the same id gets
// a new one), and so does the Replicator's state of it
// (Replicator.ForgetNode, whose counts it returns; 0, 0 without one).
func (s *Storage) ForgetNode(node string, now time.Time) (fills, holds int) {
	delete(s.nodes, node)
	if s.Replicator != nil {
		return s.Replicator.ForgetNode(node, now)
	}
	return 0, 0
}

// nodeEvictor is a node's Evictor within a Storage.
type nodeEvictor struct {
	base Evictor
	node string
	pins *Pins
	rep  *Replicator // nil without a planner
}

var (
	_ Evictor     = (*nodeEvictor)(nil)
	_ Recorder    = (*nodeEvictor)(nil)
	_ Admitter    = (*nodeEvictor)(nil)
	_ RoomChecker = (*nodeEvictor)(nil)
)

// Name returns the base policy's name.
func (e *nodeEvictor) Name() string { return e.base.Name() }

// Record implements Recorder for policies that keep state.
func (e *nodeEvictor) Record(title string, bytes int64, now time.Time) {
	if r, ok := e.base.(Recorder); ok {
		r.Record(title, bytes, now)
	}
}

// Forget implements Recorder.
func (e *nodeEvictor) Forget(title string) {
	if r, ok := e.base.(Recorder); ok {
		r.Forget(title)
	}
}

// Admit implements Admitter: the base policy's answer, true if it has
// none.
func (e *nodeEvictor) Admit(title string, bytes int64, victims []Item, now time.Time) bool {
	if a, ok := e.base.(Admitter); ok {
		return a.Admit(title, bytes, victims, now)
	}
	return true
}

// CanFree implements RoomChecker: whether the titles neither in use nor
// pinned (by the item or by the operator's pins) nor kept after the
// operator's prefetch (Replicator.Kept) hold need bytes, which is when
// Victims answers ok (its second pass takes planned titles too).
func (e *nodeEvictor) CanFree(items []Item, need int64, now time.Time) bool {
	var n int64
	for i := range items {
		if evictable(&items[i]) && !e.protects(items[i].Title, now) {
			n += items[i].Bytes
		}
	}
	return n >= need
}

// protects reports whether the node's copy of title is not evicted at
// now whatever the policy says: pinned by the operator, or kept after the
// operator's prefetch filled it (Replicator.Kept).
func (e *nodeEvictor) protects(title string, now time.Time) bool {
	return e.pins.Protects(e.node, title) || (e.rep != nil && e.rep.Kept(e.node, title, now))
}

// Victims implements Evictor: pinned and kept titles are protected; with a planner
// the titles not planned on this node go first (a first pass protects the
// planned ones as if pinned), then, if that is not enough, the planned
// ones, each pass in the base policy's order.
func (e *nodeEvictor) Victims(items []Item, need int64, now time.Time) ([]string, bool) {
	xs := make([]Item, len(items))
	copy(xs, items)
	for i := range xs {
		if e.protects(xs[i].Title, now) {
			xs[i].Pinned = true
		}
		if e.rep != nil && xs[i].Copies == 0 {
			xs[i].Copies = e.rep.Copies(e.node, xs[i].Title)
		}
	}
	if e.rep == nil {
		return e.base.Victims(xs, need, now)
	}
	first := make([]Item, len(xs))
	copy(first, xs)
	for i := range first {
		if e.rep.Planned(e.node, first[i].Title) {
			first[i].Pinned = true
		}
	}
	v, ok := e.base.Victims(first, need, now)
	if ok {
		return v, true
	}
	gone := make(map[string]bool, len(v))
	for _, t := range v {
		gone[t] = true
	}
	rest := xs[:0]
	var freed int64
	for _, it := range xs {
		if gone[it.Title] {
			freed += it.Bytes
			continue
		}
		rest = append(rest, it)
	}
	more, ok := e.base.Victims(rest, need-freed, now)
	return append(v, more...), ok
}
