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
	StoragePolicy string `json:"storage_policy"`
	Requested     int64  `json:"requested"` // sessions asked for
	Admitted      int64  `json:"admitted"`  // sessions that played
	// Refused is Requested - Admitted: no node with headroom within the
	// queue wait, or no copy could be made (RefusedNoCopy).
	Refused int64 `json:"refused"`
	// RefusedNoCopy counts refusals of a viewer placed on a node that could
	// not get the title: its disk full of titles in use, or no origin
	// channel within the fill wait.
	RefusedNoCopy int64 `json:"refused_no_copy"`
	// QoSViolations counts instants at which a node's reserved bit/s
	// exceeded its egress capacity; 0 is the QoS promise.
	QoSViolations int64 `json:"qos_violations"`
	// PeakToMean is, over the peak hour (the hour of the run with the most
	// reserved bit/s), the largest node utilization (reserved bit/s ÷
	// capacity, averaged over the hour while alive) divided by the mean of
	// the nodes' utilizations.
	PeakToMean float64 `json:"peak_to_mean"`
	// PeakUtilization is the cluster's mean utilization in the peak hour.
	PeakUtilization  float64 `json:"peak_utilization"`
	OriginFetches    int64   `json:"origin_fetches"`     // origin transfers started (demand fills and prefetches)
	OriginBytes      int64   `json:"origin_bytes"`       // bytes sent by the origin, bytes
	PeakCDPTransfers int     `json:"peak_cdp_transfers"` // most concurrent origin transfers
	// ReplicaFills counts demand fills of a title that another node held or
	// was filling: replicas the policy chose to make.
	ReplicaFills   int64   `json:"replica_fills"`
	Prefetches     int64   `json:"prefetches"`      // transfers the planner ordered
	PlacementMoves int64   `json:"placement_moves"` // planner prefetches and evictions carried out
	PlanRejected   int64   `json:"plan_rejected"`   // planner actions that could not be carried out
	Interrupted    int64   `json:"interrupted"`     // playing sessions cut off by a node failure
	Resumed        int64   `json:"resumed"`         // of those, resumed on another node
	DecisionP50Ns  int64   `json:"decision_p50_ns"` // wall ns of lsm's Admit (policy + reservation), median
	DecisionP99Ns  int64   `json:"decision_p99_ns"` // 99th percentile
	WallSeconds    float64 `json:"wall_s"`          // wall time of the run, seconds
	// Inconsistencies counts disagreements between lsm's replica view and
	// the simulated disks, or policy picks of dead nodes; always 0 unless
	// there is a bug.
	Inconsistencies int64 `json:"inconsistencies"`

	Loads *LoadSeries   `json:"-"` // per-node utilization over time, for the plot
	Trace []TraceRecord `json:"-"` // every original request, in the order decided
}

// TraceRecord is one decided request: when it was asked (seconds since the
// start), the title and its bytes, the node index chosen (-1 refused) and
// whether the node had to fill the title from the origin.
type TraceRecord struct {
	T     float64
	Title string
	Bytes int64
	Node  int
	Fill  bool
}

// LoadSeries is each node's utilization (reserved bit/s ÷ capacity) at
// every sample; NaN while the node is down.
type LoadSeries struct {
	Policy string
	Nodes  []string    // node ids
	Times  []float64   // seconds since the start
	Util   [][]float32 // [node][sample]
}

// sample records every node's utilization and checks the QoS promise.
func (e *engine) sample() {
	e.series.Times = append(e.series.Times, e.now)
	for i, n := range e.sched.Nodes {
		u := float32(math.NaN())
		if n.Alive {
			u = float32(float64(n.ReservedBps) / float64(n.Capacity.EgressBps))
		}
		if n.ReservedBps > n.Capacity.EgressBps {
			e.res.QoSViolations++
		}
		e.series.Util[i] = append(e.series.Util[i], u)
	}
}

func (e *engine) finish(wall time.Duration) {
	e.res.WallSeconds = wall.Seconds()
	e.res.Refused = e.res.Requested - e.res.Admitted
	e.res.Loads = e.series
	if len(e.decision) > 0 {
		slices.Sort(e.decision)
		e.res.DecisionP50Ns = e.decision[len(e.decision)/2]
		e.res.DecisionP99Ns = e.decision[min(len(e.decision)-1, len(e.decision)*99/100)]
	}
	e.res.PeakToMean, e.res.PeakUtilization = peakToMean(e.series, e.nodes)
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

// Run simulates cfg's demand once per policy (Config.Policies, or all) and
// returns one Result per policy, in that order. The demand is drawn once
// from the seed, so every policy sees the same requests and failures. It
// fails on an invalid configuration.
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
	for _, p := range cfg.policies() {
		e, err := newEngine(&cfg, d, p)
		if err != nil {
			return nil, err
		}
		r, err := e.run()
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
