package sim

import (
	"fmt"
	"strconv"

	"vodcluster/smm/bound"
)

// records returns the trace as the CSV holds it, times quantized to the
// millisecond inwards (bound.QuantizeTimes), in decision order; it stores
// the quantized times back, so the CSV and the figures agree exactly.
func (e *engine) records() []bound.Record {
	recs := make([]bound.Record, len(e.res.Trace))
	for i := range e.res.Trace {
		tr := &e.res.Trace[i]
		r := bound.QuantizeTimes(bound.Record{Time: tr.T, Title: tr.Title, Bytes: tr.Bytes,
			Node: strconv.Itoa(tr.Node), Fill: tr.Fill, End: tr.End})
		tr.T, tr.End = r.Time, r.End
		recs[i] = r
	}
	return recs
}

// bound computes the offline bounds for the served requests of the trace
// and the cluster's total disk, exactly as `vodcluster bound` computes
// them from the trace CSV (with --any-warm after a warm-up).
func (e *engine) bound() error {
	reqs := bound.ServedRequests(e.records())
	opt := bound.Options{AnyWarm: e.warmup > 0}
	r, err := bound.Residency(reqs, e.res.DiskBytes, opt)
	if err != nil {
		return fmt.Errorf("sim: %s/%s: residency bound: %w", e.res.StoragePolicy, e.res.Policy, err)
	}
	inst, err := bound.Compute(reqs, e.res.DiskBytes, opt)
	if err != nil {
		return fmt.Errorf("sim: %s/%s: instant bound: %w", e.res.StoragePolicy, e.res.Policy, err)
	}
	e.res.BoundOriginBytes = r.OriginBytes
	e.res.BoundInstantOriginBytes = inst.OriginBytes
	e.res.BoundFeasibleOriginBytes = r.UpperBytes
	e.res.CompulsoryOriginBytes = r.CompulsoryBytes
	if r.OriginBytes > 0 {
		e.res.OriginBytesRatioToBound = float64(e.res.OriginBytes) / float64(r.OriginBytes)
	}
	return nil
}
