package smm

import (
	"math"
	"sort"
	"time"
)

// fillKey is one title on one node.
type fillKey struct{ node, title string }

// fillRec is a prefetch ordered and not yet seen complete, or one that
// failed and waits for its retry.
type fillRec struct {
	bytes    int64
	at       time.Time // ordered, or failed (backoff)
	seen     bool      // the view showed it on its node
	backoff  bool      // failed; not to be ordered again before next
	next     time.Time
	attempts int  // failures so far
	byHand   bool // ordered by the operator (Prefetched, Queued), not by a plan
	queued   bool // the operator's, waiting for a fill slot (Queued); backoff too, with next its order time
}

// FillState says where a prefetch stands.
type FillState string

// States of a prefetch in FillStatus.
const (
	FillOrdered FillState = "ordered" // ordered, not yet seen on its node
	FillFilling FillState = "filling" // on its node, not yet complete
	FillBackoff FillState = "backoff" // failed; retried after NextTry
	FillQueued  FillState = "queued"  // the operator's, waiting for a fill slot on its node or an origin channel
)

// FillStatus is one prefetch as the admin API lists it (bytes received come
// from the node's own report).
type FillStatus struct {
	Node     string    `json:"node"`
	Title    string    `json:"title"`
	Bytes    int64     `json:"bytes"` // the title's size
	State    FillState `json:"state"`
	Since    time.Time `json:"since"` // ordered, or failed last
	Attempts int       `json:"attempts"`
	NextTry  time.Time `json:"next_try,omitzero"` // backoff only
}

// Fills returns the prefetches in progress, and those in backoff that the
// current plan still wants or the operator ordered (a failed prefetch of
// a title the plan has since moved elsewhere is not listed: nothing will
// retry it), by node and title.
func (r *Replicator) Fills() []FillStatus {
	out := make([]FillStatus, 0, len(r.fills))
	for k, f := range r.fills {
		if f.backoff && !f.byHand && !r.Planned(k.node, k.title) {
			continue
		}
		s := FillStatus{Node: k.node, Title: k.title, Bytes: f.bytes, Since: f.at, Attempts: f.attempts, State: FillOrdered}
		switch {
		case f.queued:
			s.State = FillQueued
		case f.backoff:
			s.State, s.NextTry = FillBackoff, f.next
		case f.seen:
			s.State = FillFilling
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].Title < out[j].Title
	})
	return out
}

// FillDone tells the Replicator that a fill of title on node completed
// (prefetch or not): its retry state is cleared, and the copy an
// operator's prefetch filled is kept there for EvictHold (Kept).
func (r *Replicator) FillDone(node, title string, now time.Time) {
	if r.job != nil {
		r.logged(func(r *Replicator) { r.FillDone(node, title, now) })
	}
	r.fillDone(fillKey{node, title}, now)
}

// FillFailed tells the Replicator that a prefetch of title on node failed
// (the origin refused or broke the transfer): it is not ordered again on
// that node before a backoff of RetryBase doubling per failure up to
// RetryMax, jittered in [1/2, 1] of the step. It reports whether that
// failure gave up the operator's prefetch (Prefetched, Queued) of title
// on node: its MaxHandRetries-th, after which it is neither retried nor
// listed (Fills).
func (r *Replicator) FillFailed(node, title string, now time.Time) (givenUp bool) {
	if r.job != nil {
		r.logged(func(r *Replicator) { r.FillFailed(node, title, now) })
	}
	k := fillKey{node, title}
	if r.fills[k] == nil {
		r.fills[k] = &fillRec{at: now}
	}
	return r.fillFailed(k, now)
}

// Prefetched registers a prefetch ordered outside Plan (by the operator),
// so Plan never orders a second fill of it and tracks its outcome.
func (r *Replicator) Prefetched(node, title string, bytes int64, now time.Time) {
	if r.job != nil {
		r.logged(func(r *Replicator) { r.Prefetched(node, title, bytes, now) })
	}
	k := fillKey{node, title}
	f := r.fills[k]
	if f == nil {
		f = &fillRec{}
		r.fills[k] = f
	}
	// A new order: earlier failures of the pair do not count against its
	// retries.
	// One queued (Queued) is ordered now: no longer waiting for a slot.
	f.bytes, f.at, f.seen, f.backoff, f.byHand, f.attempts, f.queued = bytes, now, false, false, true, 0, false
	delete(r.held, k) // the operator wants it there again
}

// Queued registers the operator's prefetch of title (bytes) on node that
// could not be ordered at now because the node has MaxFillsPerNode fills
// in progress or no origin channel is free: the first plan with a fill
// slot there and a free channel orders it, ahead of the plan's own
// prefetches (as a retry of the operator's failed prefetch is); until
// then Fills lists it as FillQueued, CancelPrefetch and Evicted drop it,
// and Plan orders no other fill of it there.
func (r *Replicator) Queued(node, title string, bytes int64, now time.Time) {
	if r.job != nil {
		r.logged(func(r *Replicator) { r.Queued(node, title, bytes, now) })
	}
	k := fillKey{node, title}
	r.fills[k] = &fillRec{bytes: bytes, at: now, backoff: true, next: now, byHand: true, queued: true}
	delete(r.held, k) // the operator wants it there again
}

// fillDone forgets k's fill, completed at now (or given up, when it waits
// for a retry): a completed operator's prefetch is kept (keep).
func (r *Replicator) fillDone(k fillKey, now time.Time) {
	if f := r.fills[k]; f != nil && !f.backoff {
		r.stats.FillsDone++
		r.keep(k, f, now)
	}
	delete(r.fills, k)
}

func (r *Replicator) fillFailed(k fillKey, now time.Time) (givenUp bool) {
	f := r.fills[k]
	if f == nil || f.backoff {
		return false
	}
	r.stats.FillsFailed++
	f.attempts++
	f.backoff, f.seen, f.at = true, false, now
	step := float64(r.cfg.RetryBase) * math.Exp2(float64(min(f.attempts-1, 40)))
	step = math.Min(step, float64(r.cfg.RetryMax))
	// Deterministic jitter, so retries of many titles do not come back at
	// once (and a simulation stays repeatable).
	j := float64(hashString(k.node+"\x00"+k.title)^uint64(f.attempts)*0x9e3779b97f4a7c15) / math.MaxUint64
	f.next = now.Add(time.Duration(step * (0.5 + 0.5*j)))
	if f.byHand && f.attempts >= MaxHandRetries {
		delete(r.fills, k) // the operator's prefetch is given up: not listed with a retry that never comes
		return true
	}
	return false
}

// blocked reports whether a prefetch of k may not be ordered now: one is in
// flight, or its retry time has not come.
func (r *Replicator) blocked(k fillKey, now time.Time) bool {
	f := r.fills[k]
	return f != nil && (!f.backoff || now.Before(f.next))
}

// byHand reports whether k is the operator's prefetch (Prefetched,
// Queued) still tracked.
func (r *Replicator) byHand(k fillKey) bool {
	f := r.fills[k]
	return f != nil && f.byHand
}

// MaxHandRetries is how many times an operator's prefetch is tried before
// it is given up (with the default backoff, 30 s doubling up to 30 min
// and jittered, the tries spread over one to two hours).
const MaxHandRetries = 10

// candidate is a prefetch Plan may order.
type candidate struct {
	d       *demandOf
	node    *nodeState
	urgency float64
}

// prefetches orders the fills the plan lacks, most urgent first.
func (r *Replicator) prefetches(now time.Time, ds []demandOf, alive []*nodeState, c *ClusterView) []Action {
	offPeak := r.cfg.OffPeak.Contains(now, r.cfg.Location)
	// free origin channels; slots of them for the plan's own prefetches,
	// opSlots (at least one) for the operator's orders (pins, retries of
	// prefetches by hand).
	free := max(c.OriginFree, 0)
	slots := free
	if offPeak && free > 1 {
		slots = free - 1 // one left for a viewer's fill: a cold title's viewer does not wait for a prefetch
	}
	if !offPeak {
		slots = int(float64(free) * r.cfg.PeakOriginShare)
	}
	if free == 0 {
		return nil
	}
	opSlots := max(slots, 1) // the operator's orders: at least one channel, at the peak too
	byID := make(map[string]*nodeState, len(alive))
	for _, ns := range alive {
		byID[ns.v.ID] = ns
	}
	capRef := r.capRef(alive)
	lo := minEgress(alive)
	horizon := r.cfg.PrefetchHorizon.Seconds()
	var cands []candidate
	for i := range ds {
		d := &ds[i]
		p := r.plan[d.id]
		if p == nil {
			continue
		}
		copies := len(r.holders[d.id])
		small, cref0 := someTooSmall(d.info, lo), capRef
		if small {
			// What a node carries is over the nodes that can stream it
			// (as its replica count), and a copy on a node too small to
			// stream it serves no viewer.
			cref0 = r.capRef(streamers(alive, d.info))
			copies = 0
			for _, h := range r.holders[d.id] {
				if !cannotStream(byID[h], d.info) {
					copies++
				}
			}
		}
		for _, id := range p.nodes {
			ns := byID[id]
			if ns == nil || ns.items[d.id] != nil || r.blocked(fillKey{id, d.id}, now) {
				continue
			}
			// With sites, the figures of ns's site when its viewers ask
			// for the title (siteDemand): its share of the demand, its
			// nodes' capacity and its copies.
			rate, demand, pk, cref, cs := d.rate, d.demand, d.peak, cref0, copies
			siteShare, siteCap, siteCopies := r.siteDemand(d, ns, small, byID)
			if siteShare > 0 {
				rate, demand, pk, cref, cs = siteShare*rate, siteShare*demand, siteShare*pk, siteCap, siteCopies
			}
			var u float64
			switch {
			case r.pins.Pinned(id, d.id) || (copies == 0 && r.pins.Pinned("", d.id)):
				u = math.Inf(1) // the operator asked for it
			case r.byHand(fillKey{id, d.id}):
				// The operator's prefetch there, queued or failed and due
				// again: the loop below leaves the pairs the plan wants to
				// this one, so it keeps the operator's urgency here.
				u = math.Inf(1)
			case copies == 0:
				// A viewer would wait for a fill: worth the bytes when
				// MinExpected requests are expected within the horizon
				// (a quarter of it outside off-peak: only the hottest).
				h := horizon
				if !offPeak {
					h /= 4
				}
				if d.rate*h < r.cfg.MinExpected {
					continue
				}
				u = 1e6 * (1 + d.value)
			case cs == 0:
				// None at ns's site, whose viewers ask: they fill from the
				// origin (or are served across sites). As above, at the
				// site's request rate.
				h := horizon
				if !offPeak {
					h /= 4
				}
				if rate*h < r.cfg.MinExpected {
					continue
				}
				u = 1e6 * siteShare * (1 + d.value)
			case offPeak:
				u = pk / (cref * float64(cs)) // prepare for the peak
			default:
				u = demand / (cref * float64(cs))
				if u < r.cfg.AddAbove {
					continue // its copies carry today's demand: wait for off-peak
				}
			}
			cands = append(cands, candidate{d, ns, u})
		}
	}
	// The operator's prefetches that failed, retried when their backoff
	// ends, and those queued for a fill slot (Queued): ordered first, as
	// the operator asked for them.
	for _, k := range r.sortedFillKeys() {
		f := r.fills[k]
		if !f.byHand || !f.backoff {
			continue
		}
		ns := byID[k.node]
		info, known := c.Titles[k.title]
		if ns != nil && known && tooSmall(ns.v, info) {
			// Its egress is less than the title's bitrate (lowered
			// since): given up at once, not listed as retried later.
			r.dropHand(k, f, DropTooSmall)
			continue
		}
		if now.Before(f.next) || r.isHeld(k.node, k.title, now) {
			continue
		}
		if f.attempts >= MaxHandRetries {
			r.dropHand(k, f, DropTooManyFailures) // given up: the operator can order it again
			continue
		}
		if ns != nil && ns.v.NoOrigin {
			r.dropHand(k, f, DropNoOrigin) // it cannot fill (it lost its origin since): given up, not listed as queued for ever
			continue
		}
		if ns == nil || ns.items[k.title] != nil || !known || info.Bytes <= 0 || r.plan[k.title].has(k.node) {
			continue // node gone, title there or gone, or a plan candidate above
		}
		cands = append(cands, candidate{&demandOf{id: k.title, info: info, popIdx: -1}, ns, math.Inf(1)})
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].urgency != cands[j].urgency {
			return cands[i].urgency > cands[j].urgency
		}
		return cands[i].d.value > cands[j].d.value
	})
	var out []Action
	used := 0
	for _, cd := range cands {
		if operator := math.IsInf(cd.urgency, 1); (operator && used >= opSlots) || (!operator && used >= slots) {
			break // candidates come by urgency: the operator's first
		}
		ns, d := cd.node, cd.d
		k := fillKey{ns.v.ID, d.id}
		if ns.v.NoOrigin || tooSmall(ns.v, d.info) || ns.fills >= r.cfg.MaxFillsPerNode || ns.items[d.id] != nil || r.blocked(k, now) {
			continue // NoOrigin: it cannot fill; tooSmall: it cannot stream the title
		}
		size := d.info.Bytes
		if size > ns.v.DiskBytes {
			continue
		}
		var evict []string
		if need := ns.used + size - ns.v.DiskBytes; need > 0 {
			v, ok := r.roomOn(ns, need, now, r.pins.Pinned(ns.v.ID, d.id))
			if !ok {
				continue
			}
			evict = v
		}
		for _, t := range evict {
			out = append(out, Action{Kind: Evict, Node: ns.v.ID, Title: t})
			ns.used -= ns.items[t].Bytes
			delete(ns.items, t)
			r.dropHolder(t, ns.v.ID)
			r.stats.Evictions++
		}
		out = append(out, Action{Kind: Prefetch, Node: ns.v.ID, Title: d.id})
		if f := r.fills[k]; f != nil && f.backoff && !f.queued {
			r.stats.Retries++
		}
		att, byHand := 0, false
		if f := r.fills[k]; f != nil {
			att, byHand = f.attempts, f.byHand
		}
		r.fills[k] = &fillRec{bytes: size, at: now, attempts: att, byHand: byHand}
		ns.used += size
		ns.fills++
		ns.items[d.id] = &Item{Title: d.id, Bytes: size, InUse: true, Filling: true}
		r.holders[d.id] = append(r.holders[d.id], ns.v.ID)
		r.stats.Prefetches++
		used++
	}
	r.stats.Moves = r.stats.Prefetches + r.stats.Evictions
	return out
}

// roomOn chooses titles to evict from ns to free need bytes for a
// prefetch: never one in use, pinned or kept (Kept), nor one planned on ns, nor ns's
// site's only copy of a title the plan places at that site
// (siteOnlyCopy), unless the prefetch is of a title pinned to ns (the
// operator's pin outranks what the plan wants there); the lowest gdsf
// priority (cluster-wide request rate, divided among the copies: with
// sites, those of ns's site, Copies) first.
func (r *Replicator) roomOn(ns *nodeState, need int64, now time.Time, pinnedHere bool) ([]string, bool) {
	v, ok := r.roomAmong(ns, need, now, false)
	if ok || !pinnedHere {
		return v, ok
	}
	return r.roomAmong(ns, need, now, true)
}

// roomAmong is roomOn over the titles not planned on ns, or over all of
// them when planned is true.
func (r *Replicator) roomAmong(ns *nodeState, need int64, now time.Time, planned bool) ([]string, bool) {
	items := make([]Item, 0, len(ns.items))
	for t, it := range ns.items {
		if !planned && (r.Planned(ns.v.ID, t) || r.siteOnlyCopy(ns, t)) {
			continue
		}
		x := *it
		x.Pinned = x.Pinned || r.pins.Protects(ns.v.ID, t) || r.Kept(ns.v.ID, t, now)
		x.Copies = r.Copies(ns.v.ID, t)
		items = append(items, x)
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Title < items[j].Title })
	return r.ranker().Victims(items, need, now)
}

// ranker is the gdsf order the Replicator evicts by.
func (r *Replicator) ranker() *GDSF {
	return &GDSF{SetupBytes: r.cfg.SetupBytes, Frequency: r.Value}
}

func (r *Replicator) dropHolder(title, node string) {
	h := r.holders[title]
	for i, n := range h {
		if n == node {
			r.holders[title] = append(h[:i:i], h[i+1:]...)
			return
		}
	}
}
