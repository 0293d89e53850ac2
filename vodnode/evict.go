package vodnode

import (
	"context"
	"slices"
	"sync"
)

// evictReasonOperator is the EvictCommand reason of the operator's
// eviction (the manager's Admin.Evict: vodctl evict).
const evictReasonOperator = "operator"

// evict carries out the manager's eviction of title id for reason
// (pb.EvictCommand.reason). The operator's also cancels a prefetch of it
// filling that no viewer reads, is on its way for or pins (the one a
// fill on demand would stop for its room: store.Status.Preemptible): the
// fill stops, its bytes are dropped, and its end asks for a load report
// at once (fillEnded), which no longer lists the title; cancelled says
// so. The others (planner, room, stale, withdrawn) never stop a fill.
// Errors are the store's: store.ErrUnknownTitle, store.ErrInUse (a
// reader holds it, or its fill is not one the eviction cancels: an
// eviction never cuts a playing session).
func (n *Node) evict(id, reason string) (cancelled bool, err error) {
	if reason != evictReasonOperator {
		return false, n.store.Evict(id)
	}
	cancelled, _, err = n.store.EvictOrCancel(id)
	return cancelled, err
}

// prefetchRuns are the manager's PrefetchCommands being started, by
// title: from the command's arrival to the end of its store.Prefetch
// call, which asks the origin for the title's catalog entry before the
// fill is registered (the title is in no load report until then). The
// operator's eviction of a title in that window (vodctl evict right after
// vodctl prefetch: the manager cancels a prefetch it ordered and the node
// has not reported) cannot find a fill to cancel yet: it marks the run
// instead and stops its wait for the origin, and the run carries the
// eviction out once its call has returned (a fill registered meanwhile
// is cancelled then, as a fill under way is). Safe for concurrent use.
type prefetchRuns struct {
	mu   sync.Mutex
	runs map[string][]*prefetchRun // a title's runs: the manager may give a prefetch twice (sent again at a registration)
}

// prefetchRun is one PrefetchCommand being started (prefetchRuns).
type prefetchRun struct {
	cancel  context.CancelFunc // stops its store.Prefetch call
	evicted bool               // the operator's eviction came meanwhile (prefetchRuns.mu held)
}

// start notes a prefetch of title id starting, cancel stopping it.
func (p *prefetchRuns) start(id string, cancel context.CancelFunc) *prefetchRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runs == nil {
		p.runs = map[string][]*prefetchRun{}
	}
	r := &prefetchRun{cancel: cancel}
	p.runs[id] = append(p.runs[id], r)
	return r
}

// end notes run r of title id ended, and reports whether the operator's
// eviction of the title came while it ran (its caller carries it out).
func (p *prefetchRuns) end(id string, r *prefetchRun) (evicted bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runs[id] = slices.DeleteFunc(p.runs[id], func(o *prefetchRun) bool { return o == r })
	if len(p.runs[id]) == 0 {
		delete(p.runs, id)
	}
	return r.evicted
}

// evict marks every prefetch of title id being started as evicted by the
// operator and stops their waits for the origin; it reports whether there
// was one (each run then carries the eviction out: end).
func (p *prefetchRuns) evict(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.runs[id] {
		r.evicted = true
		r.cancel()
	}
	return len(p.runs[id]) > 0
}

// evictStarted carries out the operator's eviction of title id that came
// while its prefetch was being started (prefetchRuns), that prefetch's
// store.Prefetch call having returned err: a fill it registered is
// cancelled (or a copy the node held already evicted), a call it stopped
// is no failure of the fill (not reported as one). Either way a partial
// fill of the title the prefetch would have resumed goes, as it does when
// the eviction finds the fill registered (store.EvictOrCancel keeps no
// partial of an evicted title): the operator's eviction leaves none of
// the title's bytes on the node.
func (m *managerLink) evictStarted(id string, err error) {
	n := m.n
	if err != nil {
		n.log.Info("prefetch cancelled by the manager's eviction before its fill started", "title", id, "err", err)
		// A partial it would have resumed, unless a viewer's fill took it
		// up meanwhile (in use: kept).
		if cancelled, perr := n.evict(id, evictReasonOperator); perr == nil {
			what := "what the node kept of the title (a partial fill, or a copy) removed by the manager's eviction"
			if cancelled {
				what = "a fill of the title cancelled by the manager's eviction"
			}
			n.log.Info(what, "title", id)
		}
		return
	}
	cancelled, err := n.evict(id, evictReasonOperator)
	switch {
	case err != nil:
		n.log.Info("evict of a prefetch just started not carried out", "title", id, "err", err)
	case cancelled:
		n.log.Info("prefetch cancelled by the manager's eviction: its fill stops, its bytes are dropped", "title", id)
	default:
		n.log.Info("title evicted by the manager", "title", id, "reason", evictReasonOperator)
	}
}
