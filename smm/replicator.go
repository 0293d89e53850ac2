package smm

import (
	"fmt"
	"math"
	"time"
)

// ReplicatorConfig tunes the default Planner. Zero fields take the
// defaults of DefaultReplicatorConfig.
type ReplicatorConfig struct {
	// HalfLife of the popularity estimate behind expected demand and
	// replica counts (Popularity): short, to follow demand shifts.
	HalfLife time.Duration
	// RankHalfLife of the request counts that rank titles by value (what
	// the cluster keeps, what it evicts first): long, since a title's
	// requests are close to independent and a longer memory estimates its
	// rate with less noise.
	RankHalfLife time.Duration
	// PeakHalfLife is how long the remembered peak of the cluster's
	// demand lasts (half-life); replica counts are planned for the peak.
	PeakHalfLife time.Duration
	// TargetUtilization is the share of a node's egress that expected
	// demand may take, in (0, 1].
	TargetUtilization float64
	// AddAbove and DropBelow are the hysteresis marks, as multiples of the
	// capacity of a title's replicas at TargetUtilization: a replica is
	// added when the title's expected demand exceeds AddAbove times what
	// its r replicas carry, and dropped when it would fit on r-1 replicas
	// below DropBelow. 0 < DropBelow < AddAbove.
	AddAbove, DropBelow float64
	// DiskFill is the share of each node's disk the plan may fill, in
	// (0, 1]; the rest is room for fills on demand.
	DiskFill float64
	// KeepBonus favours titles already placed: a title in the plan keeps
	// its place against one up to KeepBonus times more valuable (>= 1).
	KeepBonus float64
	// PrefetchHorizon and MinExpected: a title with no copy anywhere is
	// prefetched only when it is expected to be requested at least
	// MinExpected times within PrefetchHorizon (within a quarter of it
	// outside the off-peak window); otherwise the origin bytes could be
	// wasted: a prefetch costs what the fill on demand it replaces would,
	// and only that.
	PrefetchHorizon time.Duration
	MinExpected     float64
	// MaxFillsPerNode bounds the fills (on demand and prefetch) in
	// progress on one node when a prefetch is ordered.
	MaxFillsPerNode int
	// OffPeak is the daily window preferred for prefetches, in Location.
	// Outside it only urgent prefetches are ordered (a title's copies
	// cannot carry its demand now, or it has none and is in demand), with
	// at most PeakOriginShare of the free origin channels; inside it, with
	// every free channel but one (left for a viewer's fill), or the only
	// one free.
	OffPeak         Window
	Location        *time.Location
	PeakOriginShare float64
	// RetryBase and RetryMax bound the capped exponential backoff of a
	// prefetch that failed on one node (jittered in [1/2, 1] of the step).
	RetryBase, RetryMax time.Duration
	// FillTimeout: a prefetch the view never shows on its node after this
	// long counts as failed.
	FillTimeout time.Duration
	// SetupBytes is the fixed cost of one origin transfer in bytes, as in
	// GDSF.
	SetupBytes int64
	// EvictHold is how long an operator's eviction of a title from a node
	// (Replicator.Evicted) keeps the plan from placing the title on that
	// node again, unless it is pinned there; and how long the copy an
	// operator's prefetch filled is kept from eviction for room
	// (Replicator.Kept).
	EvictHold time.Duration
}

// Window is a daily time window [Start, End) as offsets from midnight;
// End < Start wraps past midnight. Start == End is empty.
type Window struct {
	Start, End time.Duration
}

// Contains reports whether t's time of day in loc lies in the window.
func (w Window) Contains(t time.Time, loc *time.Location) bool {
	if loc == nil {
		loc = time.UTC
	}
	t = t.In(loc)
	d := time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
		time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
	switch {
	case w.Start == w.End:
		return false
	case w.Start < w.End:
		return d >= w.Start && d < w.End
	}
	return d >= w.Start || d < w.End
}

// DefaultReplicatorConfig returns the defaults: popularity half-life 3 h
// for demand and 24 h for ranking, peak memory 12 h, 70% target utilization, hysteresis 1.0 / 0.7, 90% of
// each disk planned, keep bonus 1.25, prefetch of an absent title when at
// least 3 requests are expected within 2 h, 2 fills per node, off-peak
// 02:00-08:00 UTC with a quarter of the free origin channels outside it,
// retries from 30 s to 30 min, 10 min fill timeout, 8 MB per transfer.
func DefaultReplicatorConfig() ReplicatorConfig {
	return ReplicatorConfig{
		HalfLife:          3 * time.Hour,
		RankHalfLife:      24 * time.Hour,
		PeakHalfLife:      12 * time.Hour,
		TargetUtilization: 0.7,
		AddAbove:          1.0,
		DropBelow:         0.7,
		DiskFill:          0.9,
		KeepBonus:         1.25,
		PrefetchHorizon:   2 * time.Hour,
		MinExpected:       3,
		MaxFillsPerNode:   2,
		OffPeak:           Window{Start: 2 * time.Hour, End: 8 * time.Hour},
		Location:          time.UTC,
		PeakOriginShare:   0.25,
		RetryBase:         30 * time.Second,
		RetryMax:          30 * time.Minute,
		FillTimeout:       10 * time.Minute,
		SetupBytes:        DefaultSetupBytes,
		EvictHold:         time.Hour,
	}
}

// withDefaults fills zero fields and checks ranges.
func (c ReplicatorConfig) withDefaults() (ReplicatorConfig, error) {
	d := DefaultReplicatorConfig()
	setD := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	setF := func(v *float64, def float64) {
		if *v == 0 {
			*v = def
		}
	}
	setD(&c.HalfLife, d.HalfLife)
	setD(&c.RankHalfLife, d.RankHalfLife)
	setD(&c.PeakHalfLife, d.PeakHalfLife)
	setD(&c.PrefetchHorizon, d.PrefetchHorizon)
	setD(&c.RetryBase, d.RetryBase)
	setD(&c.RetryMax, d.RetryMax)
	setD(&c.FillTimeout, d.FillTimeout)
	setD(&c.EvictHold, d.EvictHold)
	setF(&c.TargetUtilization, d.TargetUtilization)
	setF(&c.AddAbove, d.AddAbove)
	setF(&c.DropBelow, d.DropBelow)
	setF(&c.DiskFill, d.DiskFill)
	setF(&c.KeepBonus, d.KeepBonus)
	setF(&c.MinExpected, d.MinExpected)
	setF(&c.PeakOriginShare, d.PeakOriginShare)
	if c.MaxFillsPerNode == 0 {
		c.MaxFillsPerNode = d.MaxFillsPerNode
	}
	if c.Location == nil {
		c.Location = d.Location
	}
	if c.SetupBytes == 0 {
		c.SetupBytes = d.SetupBytes
	}
	if c.OffPeak == (Window{}) {
		c.OffPeak = d.OffPeak
	}
	bad := func(f string, a ...any) (ReplicatorConfig, error) {
		return c, fmt.Errorf("smm: replicator: "+f, a...)
	}
	switch {
	case c.HalfLife < 0 || c.RankHalfLife < 0 || c.PeakHalfLife < 0 || c.PrefetchHorizon < 0 || c.FillTimeout < 0 || c.EvictHold < 0:
		return bad("durations must be >= 0")
	case c.RetryBase < 0 || c.RetryMax < c.RetryBase:
		return bad("retry base %v and max %v: need 0 <= base <= max", c.RetryBase, c.RetryMax)
	case !(c.TargetUtilization > 0 && c.TargetUtilization <= 1):
		return bad("target utilization %v out of (0, 1]", c.TargetUtilization)
	case !(c.DropBelow > 0 && c.DropBelow < c.AddAbove) || math.IsInf(c.AddAbove, 0):
		return bad("hysteresis marks drop %v, add %v: need 0 < drop < add", c.DropBelow, c.AddAbove)
	case !(c.DiskFill > 0 && c.DiskFill <= 1):
		return bad("disk fill %v out of (0, 1]", c.DiskFill)
	case !(c.KeepBonus >= 1) || math.IsInf(c.KeepBonus, 0):
		return bad("keep bonus %v must be >= 1", c.KeepBonus)
	case !(c.MinExpected >= 0) || math.IsInf(c.MinExpected, 0):
		return bad("min expected %v must be >= 0", c.MinExpected)
	case c.MaxFillsPerNode < 0:
		return bad("max fills per node %d < 0", c.MaxFillsPerNode)
	case !(c.PeakOriginShare >= 0 && c.PeakOriginShare <= 1):
		return bad("peak origin share %v out of [0, 1]", c.PeakOriginShare)
	case c.SetupBytes < 0:
		return bad("setup bytes %d < 0", c.SetupBytes)
	case c.OffPeak.Start < 0 || c.OffPeak.Start >= 24*time.Hour || c.OffPeak.End < 0 || c.OffPeak.End > 24*time.Hour:
		return bad("off-peak window %v-%v outside one day", c.OffPeak.Start, c.OffPeak.End)
	}
	return c, nil
}
