package lsm

import "time"

// Capacity is what a node can give.
type Capacity struct {
	EgressBps   int64 // bit/s the node may stream in total; > 0
	MaxSessions int   // concurrent sessions; 0 = no limit but EgressBps
	DiskBytes   int64 // bytes for stored titles
}

// NodeSpec is how a node announces itself.
type NodeSpec struct {
	ID       string   // stable, unique node id
	RTSPAddr string   // host:port for RTSP redirects
	HTTPAddr string   // host:port for HTTP redirects
	Capacity Capacity // limits admission works with
	Weight   int      // relative scheduling weight; 0 at registration means DefaultWeight
	// Site is the operator's site (point of presence) the node stands in,
	// for Request.Site; "" = none.
	Site string
	// Features are what the node offers that some requests need
	// (Request.Requires), e.g. FeatureRTSPS.
	Features Feature
	// NoOrigin: the node has no origin configured, so it cannot fill a
	// title it lacks and plays only the titles it holds complete. It is
	// eligible (Scheduler.Eligible) only for those, under every policy:
	// no fill is ever booked there, and a request for a title it lacks
	// goes to a node that can fill it (Scheduler.NoSource when none
	// can). false = it can fill (a node with an origin, or one too old
	// to say).
	NoOrigin bool
	// Started is when the node's process started (by its clock; zero when
	// it does not say). A registration of a node still alive with another
	// Started is a restart before the node was taken for dead (systemd's
	// Restart=, a container restarted within a heartbeat or two): it slow
	// starts again (Config.SlowStart), as a node that comes back does.
	Started time.Time
}

// Feature is one thing a node offers that a request may require (a bit of
// a set).
type Feature uint8

// Features of nodes.
const (
	// FeatureRTSPS: the node has an RTSPS (RTSP over TLS) address. A
	// viewer that came over RTSPS cannot follow a redirect to plain RTSP
	// (ffmpeg speaks TLS to it, gortsplib refuses to downgrade).
	FeatureRTSPS Feature = 1 << iota
	// FeatureHTTP: the node has an HTTP address (progressive and HLS
	// delivery). A node started without one serves RTSP only.
	FeatureHTTP
	// FeatureHTTPS: the node's HTTP address speaks HTTPS. Behind an HTTPS
	// front door, a browser on an https:// page refuses a redirect to
	// http:// (mixed content), and the session token in the URL would
	// travel in clear.
	FeatureHTTPS
	// FeatureUDP: the node sends RTSP media over UDP too (it does not have
	// tcp_only). A SETUP that offers only UDP (a set-top box taking raw
	// MPEG-TS in UDP) would be answered 461 by a node without it.
	FeatureUDP
)

// DefaultWeight is the weight of a node that announces none.
const DefaultWeight = 100

// MaxWeight is the largest node weight: IPVS's range, "The valid values
// of weight are 0 through to 65535" (ipvsadm(8), -w/--weight; the
// kernel keeps a destination's weight in 16 bits). Weights are relative
// (DefaultWeight = as announced), so a larger one would mean nothing
// more, and products of weights with bit/s must not overflow.
const MaxWeight = 65535

// Node is the scheduler's record of one node. Fields are read by policies
// and callers; only the Scheduler changes them (it caches values derived
// from them, so a direct write goes unnoticed until the node's next event).
type Node struct {
	NodeSpec
	Index int // position in Scheduler.Nodes; moves down only when RemoveNode removes a node before it

	Alive         bool      // heartbeats arrive
	Draining      bool      // no new sessions; playing ones stay (also when Weight is 0)
	JoinedAt      time.Time // when it last became alive (origin of slow start)
	LastHeartbeat time.Time
	// SlowUntil is the end of the node's slow start (zero when it does not
	// ramp: slow start off, or joined with the cluster).
	SlowUntil time.Time

	// Reservation accounting, kept by the Scheduler.
	ReservedBps  int64 // bit/s reserved by admitted sessions
	Sessions     int   // admitted sessions (Ns + Nd)
	FillSessions int   // admitted sessions whose title is being filled on the node now (Nd)
	FillBps      int64 // bit/s reserved by those sessions
	// InUseBytes is the bytes of titles in use on the node (playing,
	// filling, or pinned there by the operator): what its disk cannot
	// evict to make room for a new fill.
	InUseBytes int64
	// StoredBytes is the bytes of every title held or filling on the node.
	StoredBytes int64

	// Last load report.
	EgressBps int64 // measured egress, bit/s
	// DiskFreeBytes is the free disk of the last report (Report), bytes.
	DiskFreeBytes int64
	ActiveFills   int // origin transfers in progress

	// Operator settings.
	//
	// Overload is the node's own overload threshold, as utilization in
	// (0, 1] (Scheduler.SetOverload); 0 = none: only Config.Overload
	// applies, the locality policies' test of a title's holders.
	Overload float64
	// OverloadFlag is IPVS's IP_VS_DEST_F_OVERLOAD for the node's own
	// threshold: set when its utilization goes above Overload, cleared
	// when it falls below Config.OverloadLower times Overload. While it is
	// set the node is not eligible (Scheduler.Eligible) for any policy.
	OverloadFlag bool
	// Unreachable: the node's heartbeat stream broke (a crash, a cut
	// link): no new sessions until its next heartbeat, or until the missed
	// heartbeats declare it dead (Scheduler.SetUnreachable). Its sessions
	// and reservations stay meanwhile.
	Unreachable bool
	// DiskFault: the node reported that it cannot write its title cache
	// (full, read only, failing): it is eligible only for titles it holds
	// or fills (no new fill), until a report says otherwise.
	DiskFault bool

	// diskKnown: the last report gave the node's free disk
	// (Report.DiskFreeKnown). diskHolds is then the bytes the node could
	// hold in all: that free disk plus the bytes of the titles held or
	// filling there (StoredBytes), so that a fill booked since the report
	// takes its bytes from the room and an eviction ordered since leaves
	// the room as it was (roomBytes).
	diskKnown bool
	diskHolds int64

	titles   map[string]*replica // titles held or filling
	filling  int                 // of titles, those filling
	yielding int                 // of those, prefetches that give their origin channel to a fill (replica.yieldsChannel)
	stale    int                 // of titles, stale copies (Holding.Stale)
	partials map[string]Partial  // partly filled titles kept to resume (partial.go), by title
	// viewEpoch counts the changes to titles and partials (ViewEpoch).
	viewEpoch uint64

	operatorWeight bool // Weight was set by SetWeight: a re-registration keeps it
}

// replica is one title on one node.
type replica struct {
	filling  bool
	pinned   bool  // the operator pinned it there (Holding.Pinned): never evicted
	stale    bool  // a copy of a version the origin no longer serves (Holding.Stale)
	bytes    int64 // size on disk (the whole title while filling, when known)
	sessions int   // reservations on the node for this title
	fills    int   // of those, served from the fill in progress (in Node.FillSessions)
	fillBps  int64 // their bit/s (in Node.FillBps)
	// booked: a fill booked here (Place, SetReplica, Holding.Booked) that
	// no report of the node has shown yet: it starts once the viewer
	// reaches the node or the node has the order, and not at all while
	// the origin is down (Request.OriginDown).
	booked bool
	// preemptible: a prefetch filling that the node stops for a fill on
	// demand (Holding.Preemptible): not in use unless played or pinned.
	preemptible bool
}

// inUse reports whether the node cannot evict the title: it is playing,
// filling (but for a prefetch the node would stop for a fill on demand:
// Holding.Preemptible) or pinned there.
func (r *replica) inUse() bool { return r.filling && !r.preemptible || r.sessions > 0 || r.pinned }

// yieldsChannel reports whether r is a fill that gives its origin channel
// to a fill on demand: a prefetch (Holding.Preemptible) no viewer plays
// and not pinned, which the origin ends for a viewer's fill (cdp), so
// that it holds no channel of the manager's budget (originChannelsFull).
func (r *replica) yieldsChannel() bool { return r.filling && !r.inUse() }

// countYield applies change, a change of r on n, keeping n.yielding.
func countYield(n *Node, r *replica, change func()) {
	was := r.yieldsChannel()
	change()
	switch now := r.yieldsChannel(); {
	case was && !now:
		n.yielding--
	case !was && now:
		n.yielding++
	}
}

// Holds reports whether the node holds title completely (filling is false)
// or is filling it (filling is true). ok is false when it has neither.
func (n *Node) Holds(title string) (filling bool, ok bool) {
	r, ok := n.titles[title]
	if !ok {
		return false, false
	}
	return r.filling, true
}

// HoldsStale reports whether the node's copy (or fill) of title is of a
// version the origin no longer serves (Holding.Stale, SetStale): Place
// sends it a new viewer only when no other node can take one.
func (n *Node) HoldsStale(title string) bool {
	r, ok := n.titles[title]
	return ok && r.stale
}

// Titles returns the number of titles held or filling on the node.
func (n *Node) Titles() int { return len(n.titles) }

// HeadroomBps returns the bit/s still free for reservation (ignoring slow
// start; see Scheduler.Eligible).
func (n *Node) HeadroomBps() int64 { return n.Capacity.EgressBps - n.ReservedBps }

// Utilization returns the node's utilization U in [0, ...): the larger of
// reserved and measured egress bit/s over egress capacity.
func (n *Node) Utilization() float64 {
	if n.Capacity.EgressBps <= 0 {
		return 1
	}
	b := max(n.ReservedBps, n.EgressBps)
	return float64(b) / float64(n.Capacity.EgressBps)
}

// ramp returns the share of the node's capacity and weight it may use at
// now, in (0, 1]: 1 outside slow start.
func (n *Node) ramp(now time.Time, window time.Duration, floor float64) float64 {
	if n.SlowUntil.IsZero() || !now.Before(n.SlowUntil) || window <= 0 {
		return 1
	}
	left := n.SlowUntil.Sub(now)
	if left > window {
		left = window
	}
	done := 1 - float64(left)/float64(window)
	return floor + (1-floor)*done
}

// ViewEpoch counts the changes made to the node's replica view (its
// titles held or filling, their pins and stale marks, its partials):
// by load reports (Scheduler.Heartbeat with Titles) and outside them (a
// placement that books a new fill, SetReplica, DropReplica, SetPinned,
// DropPartial). A caller that applied a report and finds the epoch
// unchanged at the next one knows the view is still that report's.
func (n *Node) ViewEpoch() uint64 { return n.viewEpoch }
