package smm

import "time"

// TitleInfo is a catalog title as the planner sees it.
type TitleInfo struct {
	ID       string
	Bytes    int64   // size, bytes
	Bitrate  int64   // mean bitrate, bit/s
	Duration float64 // seconds
}

// NodeView is one node as the planner sees it.
type NodeView struct {
	ID          string
	Alive       bool    // in service (not dead; a draining node is not Alive for planning)
	DiskBytes   int64   // disk capacity for titles, bytes
	EgressBps   int64   // egress capacity, bit/s
	Utilization float64 // reserved (or measured, whichever is larger) egress / capacity
	// Site is the node's site (its point of presence), "" when none: the
	// Replicator places a title's replicas at the sites whose viewers
	// ask for it (SitePlanner).
	Site string
	// Items are the titles stored or filling: InUse for playing or
	// filling ones, Filling for fills in progress (Bytes: the whole size).
	Items []Item
	Fills int // fills (demand and prefetch) in progress on the node
	// Partials are the titles whose fill stopped short on the node and
	// whose first bytes it keeps to resume from (title -> bytes kept; not
	// Items: never served, and the node removes them first when it needs
	// room): a prefetch there fetches only the rest from the origin. nil
	// when none. Shared: a Planner must not modify it.
	Partials map[string]int64
	// NoOrigin: the node has no origin configured, so it cannot fill: it
	// plays only the titles it holds. The Replicator plans no replica
	// there that it does not hold (a pin to it included) and orders it no
	// prefetch, nor does ChooseNode pick it; the titles it holds count as
	// replicas.
	NoOrigin bool
	// DiskFault: the node reports that it cannot write its title cache
	// (a full, read-only or failing disk): ChooseNode does not pick it.
	// (The manager also gives such a node Fills at its limit, so that
	// Plan orders no prefetch there.)
	DiskFault bool
}

// ClusterView is the state a Planner plans from.
type ClusterView struct {
	Nodes  []NodeView
	Titles map[string]TitleInfo // the catalog, by id; shared between plans: a Planner must not modify it
	// OriginFree is how many more concurrent origin transfers may start now
	// (the CDP's channels minus those in use).
	OriginFree int
}

// ActionKind says what an Action orders.
type ActionKind int

// Kinds of Action.
const (
	Prefetch ActionKind = iota + 1 // fill Title on Node from the origin ahead of demand
	Evict                          // remove Title from Node
)

// String returns "prefetch" or "evict".
func (k ActionKind) String() string {
	switch k {
	case Prefetch:
		return "prefetch"
	case Evict:
		return "evict"
	}
	return "unknown"
}

// Action is one order of the planner to one node.
type Action struct {
	Kind  ActionKind
	Node  string
	Title string
}

// Planner decides replication, prefetch and eviction from popularity.
// Observe is called for every request (admitted or not; through the
// function Observe, with the viewer's site, for a SitePlanner); Plan is called
// periodically (and after demand shifts) with the cluster's state and
// returns the orders to carry out now, in order: an Evict before the
// Prefetch it makes room for. The default is Replicator (through Storage);
// NoPlanner caches on demand only. Implementations are not safe for
// concurrent use.
type Planner interface {
	Observe(title string, now time.Time)
	Plan(now time.Time, c *ClusterView) []Action
}

// SitePlanner is a Planner that plans per site: ObserveSite is Observe
// with the site of the viewer who asked ("" = none, or not known), and
// Plan places a title's replicas, and orders its prefetches, on the nodes
// (NodeView.Site) of the sites whose viewers ask for it. The Replicator
// is one. Call it through Observe, which falls back to Planner.Observe.
type SitePlanner interface {
	Planner
	ObserveSite(title, site string, now time.Time)
}

// Observe tells p of one request for title at now by a viewer of site
// ("" = none): p.ObserveSite when p is a SitePlanner, else p.Observe (the
// site is then not used).
func Observe(p Planner, title, site string, now time.Time) {
	if sp, ok := p.(SitePlanner); ok {
		sp.ObserveSite(title, site, now)
		return
	}
	p.Observe(title, now)
}

// NoPlanner orders nothing: titles are filled on demand only and evicted
// by the node's Evictor when its disk is full.
type NoPlanner struct{}

var _ Planner = NoPlanner{}

// Observe implements Planner; it does nothing.
func (NoPlanner) Observe(string, time.Time) {}

// Plan implements Planner; it returns nil.
func (NoPlanner) Plan(time.Time, *ClusterView) []Action { return nil }
