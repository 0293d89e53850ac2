package sim

import (
	"math"
	"slices"
	"time"
)

// Result is what one scheduling policy did with the demand. Counts are of
// the demand's original requests unless said otherwise.
type Result struct {
	Policy        string `json:"policy"`
	StoragePolicy string `json:"storage_policy"` // smm storage policy: evictor and planner
	// WarmupDays were simulated before the figures start (Config.WarmupDays).
	WarmupDays int   `json:"warmup_days"`
	Requested  int64 `json:"requested"` // sessions asked for
	Admitted   int64 `json:"admitted"`  // sessions that played
	// Refused is Requested - Admitted: no node with headroom within the
	// queue wait, or no copy could be made (RefusedNoCopy).
	Refused int64 `json:"refused"`
	// RefusedNoCopy counts refusals of a viewer placed on a node that could
	// not get the title: its disk full of titles in use, or no origin
	// channel within the fill wait.
	RefusedNoCopy int64 `json:"refused_no_copy"`
	// QoSViolations counts instants (each session start, each load
	// sample) at which the bit/s of a node's sessions, summed by the
	// simulator itself, exceeded its egress capacity; 0 is the QoS promise.
	QoSViolations int64 `json:"qos_violations"`
	// PeakToMean is, over the peak hour (the hour of the run with the most
	// reserved bit/s), the largest node utilization (reserved bit/s ÷
	// capacity, averaged over the hour while alive) divided by the mean of
	// the nodes' utilizations.
	PeakToMean float64 `json:"peak_to_mean"`
	// PeakUtilization is the cluster's mean utilization in the peak hour.
	PeakUtilization float64 `json:"peak_utilization"`
	OriginFetches   int64   `json:"origin_fetches"` // origin transfers started (demand fills and prefetches)
	OriginBytes     int64   `json:"origin_bytes"`   // bytes sent by the origin for them, bytes
	// DiskBytes is the nodes' disks together, bytes: the capacity of the
	// one cache the bounds take the cluster for.
	DiskBytes int64 `json:"disk_bytes"`
	// Warnings say why the figures may say little of the policies (a
	// cluster whose largest disk holds no title: every request refused);
	// none for a sound run.
	Warnings []string `json:"warnings,omitempty"`
	// BoundOriginBytes is a lower bound on the origin bytes of any storage
	// policy, online or offline, serving this run's served requests with
	// the cluster's disk (bound.Residency: the whole disk as one cache,
	// each title on it from the request to the end of its sessions);
	// after a warm-up, from any disk content the policy likes.
	BoundOriginBytes int64 `json:"bound_origin_bytes"`
	// BoundInstantOriginBytes is the same bound with requests taken as
	// instants (bound.Compute, Berger et al. 2018): lower, since it lets a
	// title leave the disk while it plays; for reference.
	BoundInstantOriginBytes int64 `json:"bound_instant_origin_bytes"`
	// BoundFeasibleOriginBytes is a feasible offline schedule under the
	// residency rule: the optimum lies between the bound and it.
	BoundFeasibleOriginBytes int64 `json:"bound_feasible_origin_bytes"`
	// CompulsoryOriginBytes is each served title's first request: no
	// storage policy avoids them (0 after a warm-up, see BoundOriginBytes).
	CompulsoryOriginBytes int64 `json:"compulsory_origin_bytes"`
	// OriginBytesRatioToBound is OriginBytes / BoundOriginBytes.
	OriginBytesRatioToBound float64 `json:"origin_bytes_ratio_to_bound"`
	PeakCDPTransfers        int     `json:"peak_cdp_transfers"` // most concurrent origin transfers
	// ReplicaFills counts demand fills of a title that another node held or
	// was filling: replicas the policy chose to make.
	ReplicaFills int64 `json:"replica_fills"`
	// ReplicaFillBytes are the bytes of those fills.
	ReplicaFillBytes int64 `json:"replica_fill_bytes"`
	Prefetches       int64 `json:"prefetches"` // prefetch transfers started
	// BypassedFills counts demand fills the node's evictor did not admit
	// (smm.Admitter, w-tinylfu): streamed to their viewer, not kept.
	BypassedFills int64 `json:"bypassed_fills"`
	// PlacementMoves are the planner's prefetches and evictions carried
	// out; with PlanRejected, the ones that could not be (no room, no
	// channel, node down), they are the moves smm counts
	// (smm.ReplicatorStats.Moves).
	PlacementMoves int64   `json:"placement_moves"`
	PlanRejected   int64   `json:"plan_rejected"`
	Interrupted    int64   `json:"interrupted"`     // playing sessions cut off by a node failure
	Resumed        int64   `json:"resumed"`         // of those, resumed on another node (each a row of the trace)
	DecisionP50Ns  int64   `json:"decision_p50_ns"` // wall ns of lsm's Admit (policy + reservation), median
	DecisionP99Ns  int64   `json:"decision_p99_ns"` // 99th percentile
	WallSeconds    float64 `json:"wall_s"`          // wall time of the run, seconds
	// Inconsistencies counts disagreements between lsm's replica view or
	// ledger and the simulated disks and sessions, or policy picks of dead
	// nodes; always 0 unless there is a bug.
	Inconsistencies int64 `json:"inconsistencies"`
	// UnbalancedReleases and OverCapacity are lsm's Anomalies at the end
	// of the run: releases its ledger could not match, and bookings above
	// a node's capacity; always 0 unless there is a bug.
	UnbalancedReleases int64 `json:"lsm_unbalanced_releases"`
	OverCapacity       int64 `json:"lsm_over_capacity"`
	// SiteFigures are the traffic between sites, only in a run with sites
	// (nil without: no such fields in the JSON).
	*SiteFigures

	Loads *LoadSeries `json:"-"` // per-node utilization over time, for the plot
	// Trace is every original request, in the order decided, and every
	// resumed playback (Resumed), each with its own row.
	Trace []TraceRecord `json:"-"`
}

// TraceRecord is one decided request: when it reached its node, or was
// refused (seconds since the start, rounded up to a millisecond), the
// title and its bytes, the node index chosen (-1 refused), whether the
// node had to fill the title from the origin, and when the session
// stopped playing (rounded down to a millisecond; 0 when refused; T when
// the node streamed its fill through without keeping it, an admission
// filter's refusal (smm.Admitter): the title took no disk room, so the
// bound counts the session as an instant request).
// Resumed marks the playback of a viewer who asked again after a node
// failure cut it off (not a request of its own in Requested; the CSV does
// not tell it apart: it is demand served like any other).
type TraceRecord struct {
	T       float64
	Title   string
	Bytes   int64
	Node    int
	Fill    bool
	End     float64
	Resumed bool
}

// LoadSeries is each node's utilization (reserved bit/s ÷ capacity) at
// every sample; NaN while the node is down.
type LoadSeries struct {
	Policy string
	Nodes  []string    // node ids
	Times  []float64   // seconds since the start
	Util   [][]float32 // [node][sample]
}

// sample records every node's utilization (the simulator's own sum of
// its sessions' bit/s over capacity), checks the QoS promise on it, and
// checks that lsm's ledger agrees.
func (e *engine) sample() {
	e.series.Times = append(e.series.Times, e.now)
	for i, n := range e.nodes {
		capBps := n.spec.Capacity.EgressBps
		u := float32(math.NaN())
		if n.alive {
			u = float32(float64(n.bps) / float64(capBps))
		}
		if n.bps > capBps {
			e.res.QoSViolations++
		}
		if e.sched.Nodes[i].ReservedBps != n.bps {
			e.res.Inconsistencies++
		}
		e.series.Util[i] = append(e.series.Util[i], u)
	}
}

func (e *engine) finish(wall time.Duration) error {
	start := time.Now()
	e.res.Loads = e.series
	if len(e.decision) > 0 {
		slices.Sort(e.decision)
		e.res.DecisionP50Ns = e.decision[len(e.decision)/2]
		e.res.DecisionP99Ns = e.decision[min(len(e.decision)-1, len(e.decision)*99/100)]
	}
	e.res.PeakToMean, e.res.PeakUtilization = peakToMean(e.series, e.nodes)
	an := e.sched.Anomalies()
	e.res.UnbalancedReleases, e.res.OverCapacity = an.UnbalancedReleases, an.OverCapacity
	e.res.siteRatios()
	err := e.bound()
	e.res.WallSeconds = wall.Seconds() + time.Since(start).Seconds()
	return err
}

// peakToMean finds the hour with the most reserved bit/s and returns
// max/mean of the nodes' mean utilization in it, and that mean.
func peakToMean(s *LoadSeries, nodes []*node) (float64, float64) {
	if len(s.Times) == 0 {
		return 0, 0
	}
	hours := int(s.Times[len(s.Times)-1]/3600) + 1
	bps := make([]float64, hours)
	cnt := make([]int, hours)
	for k, t := range s.Times {
		h := int(t / 3600)
		cnt[h]++
		for i, u := range s.Util {
			if !math.IsNaN(float64(u[k])) {
				bps[h] += float64(u[k]) * float64(nodes[i].spec.Capacity.EgressBps)
			}
		}
	}
	peak := 0
	for h := range bps {
		if cnt[h] > 0 && bps[h]/float64(cnt[h]) > bps[peak]/float64(max(1, cnt[peak])) {
			peak = h
		}
	}
	var sum, top float64
	var n int
	for _, u := range s.Util {
		var su float64
		var c int
		for k, t := range s.Times {
			if int(t/3600) == peak && !math.IsNaN(float64(u[k])) {
				su += float64(u[k])
				c++
			}
		}
		if c == 0 {
			continue
		}
		m := su / float64(c)
		sum += m
		top = max(top, m)
		n++
	}
	if n == 0 || sum == 0 {
		return 0, 0
	}
	mean := sum / float64(n)
	return top / mean, mean
}

// Run simulates cfg's demand once per storage policy (Config.StoragePolicies,
// or StoragePolicy) and scheduling policy (Config.Policies, or all) and
// returns one Result per pair, storage policy by storage policy, in that
// order; with sites (Config.Sites), the whole set once per awareness mode
// (Sites.Aware), in that order. The demand is drawn once from the seed, so
// every run sees the same requests and failures. It fails on an invalid
// configuration.
func Run(cfg Config) ([]Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	nodes := 0
	for _, k := range cfg.Cluster.Nodes {
		nodes += k.Count
	}
	d := generate(&cfg, nodes)
	var out []Result
	for _, aware := range cfg.Sites.aware() {
		for _, sp := range cfg.storagePolicies() {
			c := cfg
			c.StoragePolicy = sp
			if aware != "" {
				c.Sites.Aware = []string{aware}
			}
			for _, p := range cfg.policies() {
				e, err := newEngine(&c, d, p)
				if err != nil {
					return nil, err
				}
				r, err := e.run()
				if err != nil {
					return nil, err
				}
				out = append(out, r)
			}
		}
	}
	return out, nil
}
