package lsm

import (
	"errors"
	"fmt"
	"time"
)

// Config holds the scheduler's parameters. The zero value is not useful;
// start from DefaultConfig.
type Config struct {
	Policy string // policy name; DefaultPolicy when empty

	// Load formula of DESIGN.md: L = Ns + A*Nd + B*max(0, U-Ul), with the
	// session terms divided by the node's relative capacity (see Load).
	A      float64 // weight of a session whose title is being filled (seed: 10..100)
	B      float64 // overload penalty numerator: the penalty is B/Ul per unit of U above Ul
	Normal float64 // Ul, the normal utilization limit in (0, 1]

	// Overload is the utilization above which a node holding the title is
	// passed over by locality-aware policies; per node when Node.Overload is set.
	Overload float64

	HeartbeatInterval time.Duration // expected interval between heartbeats
	MissedHeartbeats  int           // heartbeats missed before a node is dead
	SlowStart         time.Duration // a node that (re)joins ramps its share over this window; 0 = off
}

// DefaultPolicy is the policy used when none is configured: locality-aware
// least load on the load formula.
const DefaultPolicy = "lall"

// DefaultConfig returns the parameters the manager starts with.
func DefaultConfig() Config {
	return Config{
		Policy:            DefaultPolicy,
		A:                 10,
		B:                 100,
		Normal:            0.8,
		Overload:          0.9,
		HeartbeatInterval: time.Second,
		MissedHeartbeats:  3,
		SlowStart:         30 * time.Second,
	}
}

// Errors of Place and the queue.
var (
	ErrNoNode      = errors.New("lsm: no live node in service")                 // nothing to place on at all
	ErrNoCapacity  = errors.New("lsm: no node has headroom for the bitrate")    // all nodes full for this request
	ErrDeadline    = errors.New("lsm: queued request reached its deadline")     // refused after waiting
	ErrUnknownNode = errors.New("lsm: unknown node")                            // node id not registered
	ErrBadRequest  = errors.New("lsm: request needs a title and a bitrate > 0") // malformed request
)

// Request is one admission request to place.
type Request struct {
	Title   string // title id: the destination key of dh, lblc, lard, chbl
	Client  string // subscriber id or client address: the source key of sh
	Bitrate int64  // bit/s to reserve; > 0

	titleHash, clientHash uint64
}

// TitleHash returns a 64-bit hash of r.Title (FNV-1a), computed once.
func (r *Request) TitleHash() uint64 {
	if r.titleHash == 0 {
		r.titleHash = hash64(r.Title)
	}
	return r.titleHash
}

// ClientHash returns a 64-bit hash of r.Client (FNV-1a), computed once.
func (r *Request) ClientHash() uint64 {
	if r.clientHash == 0 {
		r.clientHash = hash64(r.Client)
	}
	return r.clientHash
}

func hash64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	if h == 0 {
		h = 1
	}
	return h
}

// Reservation is a granted placement: bit/s reserved on one node.
type Reservation struct {
	Node    int    // index in Scheduler.Nodes
	NodeID  string // node id
	Title   string
	Bitrate int64 // bit/s reserved
	Fill    bool  // the node neither held nor was filling the title: it will fill from the origin
}

// Scheduler is the node registry, the reservation ledger and the policy.
// It is not safe for concurrent use.
type Scheduler struct {
	Config Config
	Nodes  []*Node // every node ever registered, by Index

	byID   map[string]*Node
	policy Policy
	queue  queue
}

// New returns a scheduler with cfg; it fails on an unknown policy name or
// parameters out of range.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Policy == "" {
		cfg.Policy = DefaultPolicy
	}
	if cfg.Normal <= 0 || cfg.Normal > 1 {
		return nil, fmt.Errorf("lsm: normal utilization limit %v out of (0, 1]", cfg.Normal)
	}
	if cfg.A < 0 || cfg.B < 0 {
		return nil, fmt.Errorf("lsm: load weights a=%v b=%v must be >= 0", cfg.A, cfg.B)
	}
	if cfg.MissedHeartbeats <= 0 {
		cfg.MissedHeartbeats = 3
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = time.Second
	}
	p, err := NewPolicy(cfg.Policy, cfg)
	if err != nil {
		return nil, err
	}
	return &Scheduler{Config: cfg, byID: map[string]*Node{}, policy: p}, nil
}

// Policy returns the current policy.
func (s *Scheduler) Policy() Policy { return s.policy }

// SetPolicy switches to the policy called name. Reservations stay as they
// are: no session is dropped or moved.
func (s *Scheduler) SetPolicy(name string) error {
	p, err := NewPolicy(name, s.Config)
	if err != nil {
		return err
	}
	s.policy = p
	s.Config.Policy = name
	return nil
}

// Node returns the node with id, or nil.
func (s *Scheduler) Node(id string) *Node { return s.byID[id] }

// AddNode registers a node, or updates a known one (a node that restarts
// registers again): it becomes alive, and its slow start begins when it was
// not alive before.
func (s *Scheduler) AddNode(spec NodeSpec, now time.Time) (*Node, error) {
	if spec.ID == "" {
		return nil, fmt.Errorf("lsm: node without id")
	}
	if spec.Capacity.EgressBps <= 0 {
		return nil, fmt.Errorf("lsm: node %s: egress capacity must be > 0 bit/s", spec.ID)
	}
	if spec.Weight <= 0 {
		spec.Weight = DefaultWeight
	}
	n := s.byID[spec.ID]
	if n == nil {
		n = &Node{Index: len(s.Nodes), titles: map[string]*replica{}}
		s.Nodes = append(s.Nodes, n)
		s.byID[spec.ID] = n
	}
	n.NodeSpec = spec
	if !n.Alive {
		n.Alive = true
		n.JoinedAt = now
	}
	n.LastHeartbeat = now
	return n, nil
}

// Report is the part of a node's load report the scheduler uses.
type Report struct {
	EgressBps     int64     // bit/s measured over the last interval
	DiskFreeBytes int64     // bytes
	ActiveFills   int       // origin transfers in progress
	Titles        []Holding // every title on the node; nil leaves the replica view as it is
}

// Holding is one title on a node.
type Holding struct {
	Title   string
	Bytes   int64 // bytes stored
	Filling bool  // a fill is in progress
}

// Heartbeat records a load report from node id. A dead node that reports
// again is alive, and slow-starts.
func (s *Scheduler) Heartbeat(id string, r Report, now time.Time) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	if !n.Alive {
		n.Alive = true
		n.JoinedAt = now
	}
	n.LastHeartbeat = now
	n.EgressBps = r.EgressBps
	n.DiskFreeBytes = r.DiskFreeBytes
	n.ActiveFills = r.ActiveFills
	if r.Titles != nil {
		seen := make(map[string]struct{}, len(r.Titles))
		for _, h := range r.Titles {
			seen[h.Title] = struct{}{}
			s.setReplica(n, h.Title, h.Filling, h.Bytes)
		}
		for t := range n.titles {
			if _, ok := seen[t]; !ok {
				s.dropReplica(n, t)
			}
		}
	}
	return nil
}

// SetReplica records that node id holds (filling false) or is filling
// title; the SMM calls it when it orders a prefetch.
func (s *Scheduler) SetReplica(id, title string, filling bool, bytes int64) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	s.setReplica(n, title, filling, bytes)
	return nil
}

// DropReplica records that node id no longer holds title (evicted).
func (s *Scheduler) DropReplica(id, title string) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	s.dropReplica(n, title)
	return nil
}

func (s *Scheduler) setReplica(n *Node, title string, filling bool, bytes int64) {
	r := n.titles[title]
	if r == nil {
		r = &replica{}
		n.titles[title] = r
	}
	r.filling, r.bytes = filling, bytes
}

func (s *Scheduler) dropReplica(n *Node, title string) {
	delete(n.titles, title)
}

// Tick marks dead every alive node whose last heartbeat is older than
// MissedHeartbeats intervals, and returns them. Dead nodes get no new
// sessions; what to do with their sessions is the caller's business (the
// ACM ends them and calls Release).
func (s *Scheduler) Tick(now time.Time) []*Node {
	var dead []*Node
	limit := time.Duration(s.Config.MissedHeartbeats) * s.Config.HeartbeatInterval
	for _, n := range s.Nodes {
		if n.Alive && now.Sub(n.LastHeartbeat) > limit {
			n.Alive = false
			dead = append(dead, n)
		}
	}
	return dead
}

// MarkDead takes node id out of service at once (its heartbeat stream
// broke, say).
func (s *Scheduler) MarkDead(id string) {
	if n := s.byID[id]; n != nil {
		n.Alive = false
	}
}

// SetWeight sets node id's weight; 0 drains it.
func (s *Scheduler) SetWeight(id string, w int) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	if w < 0 {
		return fmt.Errorf("lsm: weight %d < 0", w)
	}
	n.Weight = w
	return nil
}

// SetDraining sets or clears node id's drain flag: a draining node gets no
// new sessions and keeps the ones it plays.
func (s *Scheduler) SetDraining(id string, d bool) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	n.Draining = d
	return nil
}

// InService reports whether n may take new sessions at all: alive, not
// draining, weight above 0.
func (s *Scheduler) InService(n *Node) bool {
	return n.Alive && !n.Draining && n.Weight > 0
}

// Eligible reports whether node i may take r now: in service, with
// headroom for r's bitrate and below its session limit.
func (s *Scheduler) Eligible(i int, r *Request) bool {
	n := s.Nodes[i]
	if !s.InService(n) || n.ReservedBps+r.Bitrate > n.Capacity.EgressBps {
		return false
	}
	return n.Capacity.MaxSessions <= 0 || n.Sessions < n.Capacity.MaxSessions
}

// Load returns the load formula of DESIGN.md for node i:
//
//	L = (Ns + A*Nd) / c + (B/Ul) * max(0, U - Ul)
//
// where Ns and Nd are the node's sessions served from a local copy and from
// a fill, U its utilization, Ul the normal limit, and c its relative
// capacity: egress capacity in units of 100 Mbit/s times weight/100, so
// that heterogeneous nodes compare by how full they are, not by how many
// sessions they hold. Source: the seed's formula L = Ns + a*Nd +
// b*max(0, L_actual - Ll), with b inversely proportional to Ll.
func (s *Scheduler) Load(i int) float64 {
	n := s.Nodes[i]
	c := float64(n.Capacity.EgressBps) / 1e8 * float64(n.Weight) / DefaultWeight
	if c <= 0 {
		c = 1e-9
	}
	ns := float64(n.Sessions - n.FillSessions)
	nd := float64(n.FillSessions)
	l := (ns + s.Config.A*nd) / c
	if u := n.Utilization(); u > s.Config.Normal {
		l += s.Config.B / s.Config.Normal * (u - s.Config.Normal)
	}
	return l
}

// Overloaded reports whether node i's utilization is above its overload
// threshold (Node.Overload, else Config.Overload).
func (s *Scheduler) Overloaded(i int) bool {
	n := s.Nodes[i]
	th := n.Overload
	if th <= 0 {
		th = s.Config.Overload
	}
	return n.Utilization() > th
}

// Place chooses a node for r with the current policy and reserves r's
// bitrate on it. It returns ErrBadRequest, ErrNoNode when no node is in
// service, or ErrNoCapacity when none has headroom.
func (s *Scheduler) Place(r *Request, now time.Time) (Reservation, error) {
	if r.Title == "" || r.Bitrate <= 0 {
		return Reservation{}, ErrBadRequest
	}
	i := s.policy.Pick(s, r)
	if i < 0 {
		for _, n := range s.Nodes {
			if s.InService(n) {
				return Reservation{}, ErrNoCapacity
			}
		}
		return Reservation{}, ErrNoNode
	}
	if !s.Eligible(i, r) {
		// A policy bug must never break the QoS promise.
		return Reservation{}, fmt.Errorf("lsm: policy %s picked ineligible node %s", s.policy.Name(), s.Nodes[i].ID)
	}
	return s.reserve(i, r.Title, r.Bitrate), nil
}

// Reserve books bitrate on node id for title without asking the policy: the
// manager rebuilds its ledger this way after a restart. It fails with
// ErrUnknownNode.
func (s *Scheduler) Reserve(id, title string, bitrate int64) (Reservation, error) {
	n := s.byID[id]
	if n == nil {
		return Reservation{}, fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	return s.reserve(n.Index, title, bitrate), nil
}

func (s *Scheduler) reserve(i int, title string, bitrate int64) Reservation {
	n := s.Nodes[i]
	_, has := n.titles[title]
	res := Reservation{Node: i, NodeID: n.ID, Title: title, Bitrate: bitrate, Fill: !has}
	n.ReservedBps += bitrate
	n.Sessions++
	if res.Fill {
		n.FillSessions++
		s.setReplica(n, title, true, 0) // the node will fill it: the next viewer shares the fill
	}
	return res
}

// Release returns a reservation's bitrate to its node. Releasing twice is
// the caller's bug; counters never go below zero.
func (s *Scheduler) Release(res Reservation) {
	if res.Node < 0 || res.Node >= len(s.Nodes) {
		return
	}
	n := s.Nodes[res.Node]
	n.ReservedBps = max(0, n.ReservedBps-res.Bitrate)
	n.Sessions = max(0, n.Sessions-1)
	if res.Fill {
		n.FillSessions = max(0, n.FillSessions-1)
	}
	if rl, ok := s.policy.(Releaser); ok {
		rl.Released(s, res)
	}
}
