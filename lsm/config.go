package lsm

import (
	"errors"
	"fmt"
	"math"
	"time"

	"vodcluster/proto/durtext"
)

// Config holds the scheduler's parameters. The zero value is not useful;
// start from DefaultConfig.
type Config struct {
	Policy string // policy name; DefaultPolicy when empty

	// Load formula of DESIGN.md: L = Ns + A*Nd + B*max(0, U-Ul), with
	// sessions weighed by bit/s and divided by capacity (see Load).
	A      float64 // weight of a session whose title is being filled (seed: 10..100)
	B      float64 // overload penalty: B/Ul per unit of utilization above Ul
	Normal float64 // Ul, the normal utilization limit in (0, 1]

	// DiskPressure is what the default policy adds to the cost of a new
	// fill on a node per unit of its disk share in use (titles playing or
	// filling, which cannot be evicted), in load units (utilization): it
	// steers new titles to nodes with disk to spare, so that at the peak
	// some node still has room for a title nobody holds. >= 0.
	DiskPressure float64

	// Overload is the utilization above which a title's holder counts as
	// overloaded for the locality policies (lall, lblc, lblcr: see
	// Scheduler.Overloaded); a node's own threshold (Node.Overload, set
	// by SetOverload) replaces it for that node and also takes the node
	// out of every policy's choice while it is above it. In [Normal, 1]:
	// below Normal a holder would be passed over (and its title filled
	// again elsewhere) before the load formula sees it as loaded. 0 means
	// 0.9, or Normal if that is higher.
	Overload float64
	// OverloadLower is the lower mark of a node's own overload threshold,
	// as a share of it, in (0, 1]: a node flagged overloaded is eligible
	// again once its utilization falls below OverloadLower * Node.Overload
	// (IPVS's lower threshold; without one the kernel clears the flag at
	// 3/4 of the upper). 0 means 0.9.
	OverloadLower float64

	// FillRefBps is the reference session of the default policy's fill
	// charge, bit/s: a session that needs a new fill is charged A such
	// sessions at the cluster's mean weighted capacity on top of its own
	// load, whatever its title's bitrate (see LocalityLeastLoad). 0 means
	// 4 Mbit/s.
	FillRefBps int64

	// OriginChannels is the origin's (CDP's) number of concurrent
	// transfers, as the manager configures it for the storage planner.
	// When the replica view has that many fills in progress on alive
	// nodes (LiveFilling), the default policy sends a request to a holder with headroom, even
	// an overloaded one, rather than order a fill that would wait for a
	// channel. 0 = unknown: the origin is not taken into account.
	OriginChannels int
	// FillNeedsChannel: while LiveFilling is at OriginChannels, no policy may
	// place a session on a node that would have to start a fill; only a
	// node that holds or fills the title is eligible, and a request no such
	// node can take waits in the queue (Admit, Pump) for a channel to free
	// up, or its deadline. The manager sets it: a viewer sent to a node to
	// wait for a channel gets a started session and no media for as long
	// as the fills ahead of it last. The simulator models that wait
	// (its FillWait) and leaves it off.
	FillNeedsChannel bool

	HeartbeatInterval time.Duration // expected interval between heartbeats
	MissedHeartbeats  int           // heartbeats missed before a node is dead
	// SlowStart is the window over which a node that joins or comes back
	// ramps its share: its admissible egress grows linearly from
	// SlowStartFloor of its capacity to all of it, and its weight likewise
	// for weighted policies. Nodes that join within the first window after
	// the scheduler saw its first node (a cluster start) do not ramp.
	// 0 = off.
	SlowStart time.Duration
	// SlowStartFloor is the share of capacity a node gets at the start of
	// its ramp, in (0, 1]; 0 means 0.1.
	SlowStartFloor float64

	// LBLCExpiration is how long an unused title->node entry of lblc and
	// lblcr lives (Linux: lblc_expiration, lblcr_expiration, 24 h), and
	// an unused entry of lard and lard/r (LARD, LARDR).
	LBLCExpiration time.Duration
	// LBLCRShrink is how long an lblcr or lard/r server set must stay
	// unmodified before its most loaded member is dropped (Linux lblcr
	// uses lblcr_expiration for this; Pai et al. call it K, 20 s).
	LBLCRShrink time.Duration

	// LARDLow and LARDHigh are the LARD thresholds T_low and T_high, as
	// utilization (reserved bit/s / capacity): a title is moved off its
	// node when that node is above T_high and some node is below T_low, or
	// the node is at 2*T_high or more. Pai et al. use 25 and 65 connections.
	LARDLow, LARDHigh float64

	// CHBLFactor is the balance factor c > 1 of consistent hashing with
	// bounded loads: no node takes a session that would bring its
	// utilization above c times the mean (HAProxy's hash-balance-factor
	// 125 is 1.25).
	CHBLFactor float64

	// Seed seeds the random choices of twos.
	Seed uint64
}

// DefaultPolicy is the policy used when none is configured: locality-aware
// least load on the load formula.
const DefaultPolicy = "lall"

// DefaultConfig returns the parameters the manager starts with.
func DefaultConfig() Config {
	return Config{
		Policy:            DefaultPolicy,
		A:                 30,
		B:                 1,
		DiskPressure:      0.05,
		Normal:            0.8,
		Overload:          0.9,
		OverloadLower:     0.9,
		FillRefBps:        4_000_000,
		HeartbeatInterval: time.Second,
		MissedHeartbeats:  3,
		SlowStart:         30 * time.Second,
		SlowStartFloor:    0.1,
		LBLCExpiration:    24 * time.Hour,
		LBLCRShrink:       5 * time.Minute,
		LARDLow:           0.4,
		LARDHigh:          0.85,
		CHBLFactor:        1.25,
		Seed:              1,
	}
}

// Validate reports the first parameter out of range, or nil. Zero values
// of the optional fields are replaced by their defaults in New. NaN and
// the infinities are out of every range (each test below is written so
// that NaN fails it): A = +Inf made every load NaN, a NaN slow-start floor
// kept a slow-starting node from taking any session, a NaN chbl factor
// refused every request.
func (c *Config) Validate() error {
	finite := func(xs ...float64) bool {
		for _, x := range xs {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return false
			}
		}
		return true
	}
	if !(c.Normal > 0 && c.Normal <= 1) {
		return fmt.Errorf("lsm: normal utilization limit %v out of (0, 1]", c.Normal)
	}
	if !(c.A >= 0) || !(c.B >= 0) || !(c.DiskPressure >= 0) || !finite(c.A, c.B, c.DiskPressure) {
		return fmt.Errorf("lsm: load weights a=%v b=%v disk=%v must be finite and >= 0", c.A, c.B, c.DiskPressure)
	}
	if !(c.Overload >= 0 && c.Overload <= 1) || !(c.OverloadLower >= 0 && c.OverloadLower <= 1) {
		return fmt.Errorf("lsm: overload threshold %v or lower mark %v out of [0, 1] (0: the default)", c.Overload, c.OverloadLower)
	}
	if c.Overload != 0 && c.Overload < c.Normal {
		return fmt.Errorf("lsm: overload threshold %v below the normal utilization limit %v: holders would be passed over, and their titles filled again elsewhere, before they are loaded", c.Overload, c.Normal)
	}
	if c.FillRefBps < 0 || c.OriginChannels < 0 {
		return fmt.Errorf("lsm: fill reference %d bit/s and origin channels %d must be >= 0", c.FillRefBps, c.OriginChannels)
	}
	if c.SlowStart < 0 {
		return fmt.Errorf("lsm: slow start %s < 0", durtext.Written(c.SlowStart))
	}
	if !(c.SlowStartFloor >= 0 && c.SlowStartFloor <= 1) {
		return fmt.Errorf("lsm: slow start floor %v out of (0, 1]", c.SlowStartFloor)
	}
	if !(c.LARDLow >= 0 && c.LARDHigh >= 0 && c.LARDHigh <= 1) || (c.LARDHigh > 0 && !(c.LARDLow < c.LARDHigh)) {
		return fmt.Errorf("lsm: lard thresholds low=%v high=%v: need 0 <= low < high <= 1 (fractions of capacity)", c.LARDLow, c.LARDHigh)
	}
	if c.CHBLFactor != 0 && !(c.CHBLFactor > 1 && finite(c.CHBLFactor)) {
		return fmt.Errorf("lsm: chbl balance factor %v must be finite and > 1", c.CHBLFactor)
	}
	return nil
}

// withDefaults fills the optional zero fields.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Policy == "" {
		c.Policy = DefaultPolicy
	}
	if c.Overload == 0 {
		c.Overload = max(d.Overload, c.Normal)
	}
	if c.OverloadLower == 0 {
		c.OverloadLower = d.OverloadLower
	}
	if c.FillRefBps == 0 {
		c.FillRefBps = d.FillRefBps
	}
	if c.MissedHeartbeats <= 0 {
		c.MissedHeartbeats = d.MissedHeartbeats
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = d.HeartbeatInterval
	}
	if c.SlowStartFloor == 0 {
		c.SlowStartFloor = d.SlowStartFloor
	}
	if c.LBLCExpiration <= 0 {
		c.LBLCExpiration = d.LBLCExpiration
	}
	if c.LBLCRShrink <= 0 {
		c.LBLCRShrink = d.LBLCRShrink
	}
	if c.LARDHigh == 0 {
		c.LARDLow, c.LARDHigh = d.LARDLow, d.LARDHigh
	}
	if c.CHBLFactor == 0 {
		c.CHBLFactor = d.CHBLFactor
	}
	return c
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
	Title   string // title id: the destination key of dh, lblc, lblcr, lard, chbl
	Client  string // subscriber id or client address: the source key of sh and mh
	Bitrate int64  // bit/s to reserve; > 0
	// Bytes is the title's size; a node that neither holds nor fills the
	// title takes the session only with that much disk not in use. 0 =
	// unknown: no disk check.
	Bytes int64
	// NoFill: only a node that holds or fills the title may take the
	// session (every origin channel is taken, or the origin is
	// unavailable: no fill can start).
	NoFill bool
	// OriginDown: the origin is unavailable. As NoFill, and a fill booked
	// on a node that no report of the node shows yet (Holding.Booked, a
	// placement whose viewer has not reached the node) does not count as
	// the node holding the title: that fill cannot start either, and a
	// viewer sent there would be refused by the node. Only nodes whose
	// reports show the title, whole or filling, may take the session.
	OriginDown bool
	// Site is the client's site (the manager maps client addresses to
	// the operator's sites): when set, Place tries the nodes of that
	// site (NodeSpec.Site) first, with the policy's own choice among
	// them, then, unless SiteOnly, every node: a viewer is served across
	// sites rather than refused. "" = any node.
	Site string
	// SiteOnly keeps r to the nodes of Site: when none of them can take
	// it, Place fails (ErrNoCapacity) rather than try the other nodes.
	// Without Site it has no effect.
	SiteOnly bool
	// Requires are the features a node must offer to take r
	// (NodeSpec.Features); none: any node.
	Requires Feature
	// restrict is the site Eligible keeps to during Place's first try.
	restrict string
	// noStale: place does not fall back to stale copies (staleFallback)
	// during Place's tries of the current version across sites.
	noStale bool
	// noChannel: every origin channel is taken by fills that keep theirs
	// (OriginChannelsBusy), set by place: Eligible then refuses a node
	// whose copy is a prefetch that gives its channel away.
	noChannel bool

	titleHash, clientHash uint64
}

// TitleHash returns a 64-bit hash of r.Title (FNV-1a, then a 64-bit
// finaliser), computed once.
func (r *Request) TitleHash() uint64 {
	if r.titleHash == 0 {
		r.titleHash = hash64(r.Title)
	}
	return r.titleHash
}

// ClientHash returns a 64-bit hash of r.Client (FNV-1a, then a 64-bit
// finaliser), computed once.
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
	h = mix64(h)
	if h == 0 {
		h = 1
	}
	return h
}

// mix64 is the splitmix64 finaliser: FNV-1a alone spreads short keys
// that differ in their last byte poorly over the high bits.
func mix64(z uint64) uint64 {
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	z ^= z >> 31
	return z
}

// Reservation is a granted placement: bit/s reserved on one node.
type Reservation struct {
	Node    int    // index in Scheduler.Nodes when made (RemoveNode may move the node down; Release then finds it by NodeID)
	NodeID  string // node id
	Title   string
	Bitrate int64 // bit/s reserved
	Fill    bool  // the node neither held nor was filling the title: it will fill from the origin
}
