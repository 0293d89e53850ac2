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
}

// DefaultWeight is the weight of a node that announces none.
const DefaultWeight = 100

// Node is the scheduler's record of one node. Fields are read by policies;
// only the Scheduler changes them.
type Node struct {
	NodeSpec
	Index int // position in Scheduler.Nodes, stable for the node's lifetime

	Alive         bool      // heartbeats arrive
	Draining      bool      // no new sessions; playing ones stay (also when Weight is 0)
	JoinedAt      time.Time // when it last became alive (origin of slow start)
	LastHeartbeat time.Time

	// Reservation accounting, kept by the Scheduler.
	ReservedBps  int64 // bit/s reserved by admitted sessions
	Sessions     int   // admitted sessions (Ns + Nd)
	FillSessions int   // admitted sessions whose title was not on the node when placed (Nd)

	// Last load report.
	EgressBps     int64 // measured egress, bit/s
	DiskFreeBytes int64 // bytes
	ActiveFills   int   // origin transfers in progress

	// Operator settings.
	Overload float64 // utilization above which the node counts as overloaded; 0 = the scheduler's default

	titles map[string]*replica // titles held or filling
}

// replica is one title on one node.
type replica struct {
	filling bool
	bytes   int64
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

// Titles returns the number of titles held or filling on the node.
func (n *Node) Titles() int { return len(n.titles) }

// HeadroomBps returns the bit/s still free for reservation.
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
