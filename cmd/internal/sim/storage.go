package sim

import (
	"slices"

	"vodcluster/lsm"
	"vodcluster/smm"
)

// node is a VOD node as the simulator keeps it: its disk (a cache of whole
// titles run by an smm.Evictor) and its sessions.
type node struct {
	spec     lsm.NodeSpec
	alive    bool
	disk     map[int32]*item
	used     int64 // bytes stored or reserved for fills in progress
	bps      int64 // bit/s of its sessions (playing or waiting), summed by the simulator
	evictor  smm.Evictor
	passing  []int32 // pass-through fills (fillJob.bypass) started since the node last failed
	sessions []int32
	items    []smm.Item // scratch for Victims
}

// item is one title on a node's disk.
type item struct {
	bytes int64
	last  float64 // last session start, seconds
	hits  float64 // session starts
	users int     // sessions on the node playing or waiting for it
	fill  int32   // the fill in progress, -1 when complete
}

func (it *item) inUse() bool { return it.users > 0 || it.fill >= 0 }

type fillState uint8

const (
	fillQueued    fillState = iota + 1 // waiting for an origin channel
	fillSetup                          // has a channel, paying the setup delay
	fillFlowing                        // bytes arriving; viewers play
	fillDone                           // complete
	fillCancelled                      // given up (no viewer left, or the node failed)
)

// fillJob is one origin transfer of a whole title to a node.
type fillJob struct {
	id       int32
	node     int
	title    int32
	bytes    int64
	prefetch bool
	// bypass: the node's evictor did not admit the title (smm.Admitter):
	// the fill streams to its viewer and is not kept; no disk item, no
	// replica in lsm's view.
	bypass   bool
	state    fillState
	acquired float64 // when it got its channel
	waiters  []int32 // sessions waiting for the first bytes
}

// cdpState is the origin's channels: at most Channels transfers at once,
// the others wait in arrival order (as the cdp package's Fetch waits).
type cdpState struct {
	active int
	queue  []*fillJob
}

// startFill reserves disk room on node ni for title (evicting with the
// node's Evictor what is not in use) and asks the origin for it. It
// returns the fill's index, or false when the disk cannot make room: the
// node refuses the viewer (refused_no_copy), as a real node answers 453.
// A demand fill that the evictor does not admit (smm.Admitter, when room
// must be made) is a pass-through: it streams to its viewer, evicts
// nothing and is not kept (fillJob.bypass).
func (e *engine) startFill(ni int, ti int32, prefetch bool) (int32, bool) {
	n := e.nodes[ni]
	t := &e.d.titles[ti]
	victims, ok := e.victims(ni, t.bytes)
	if !ok {
		return -1, false
	}
	f := &fillJob{id: int32(len(e.fills)), node: ni, title: ti, bytes: t.bytes, prefetch: prefetch}
	if adm, isAdm := n.evictor.(smm.Admitter); isAdm && !prefetch && len(victims) > 0 &&
		!adm.Admit(t.id, t.bytes, victims, at(e.now)) {
		f.bypass = true
		n.passing = append(n.passing, f.id)
		e.sched.DropReplica(n.spec.ID, t.id) // the node will not hold it
		if e.measuring() {
			e.res.BypassedFills++
		}
	} else {
		for _, v := range victims {
			e.removeItem(ni, e.byID[v.Title])
		}
		n.disk[ti] = &item{bytes: t.bytes, fill: f.id, last: e.now}
		n.used += t.bytes
		if prefetch {
			e.sched.SetReplica(n.spec.ID, t.id, true, t.bytes) // in use while it fills: lsm counts its room
		}
	}
	e.fills = append(e.fills, f)
	if e.cdp.active < e.cfg.CDP.Channels {
		e.acquire(f)
	} else {
		f.state = fillQueued
		e.cdp.queue = append(e.cdp.queue, f)
	}
	return f.id, true
}

// victims returns the titles node ni's evictor would remove to make need
// bytes of room (none when there is room), or false when it cannot.
func (e *engine) victims(ni int, need int64) ([]smm.Item, bool) {
	n := e.nodes[ni]
	free := n.spec.Capacity.DiskBytes - n.used
	if need <= free {
		return nil, true
	}
	if need > n.spec.Capacity.DiskBytes {
		return nil, false
	}
	n.items = n.items[:0]
	for _, ti := range sortedTitles(n.disk) { // map order is random: runs must repeat
		it := n.disk[ti]
		n.items = append(n.items, smm.Item{
			Title: e.d.titles[ti].id, Bytes: it.bytes, InUse: it.inUse(),
			LastAccess: at(it.last), Hits: it.hits,
		})
	}
	names, ok := n.evictor.Victims(n.items, need-free, at(e.now))
	if !ok {
		return nil, false
	}
	out := make([]smm.Item, 0, len(names))
	room := free
	for _, v := range names {
		ti, known := e.byID[v]
		it := n.disk[ti]
		if !known || it == nil || it.inUse() {
			e.res.Inconsistencies++ // the evictor named a title it must not
			return nil, false
		}
		out = append(out, smm.Item{Title: v, Bytes: it.bytes, LastAccess: at(it.last), Hits: it.hits})
		room += it.bytes
	}
	return out, need <= room
}

// removeItem removes a title from a node's disk and from lsm's view.
func (e *engine) removeItem(ni int, ti int32) {
	n := e.nodes[ni]
	if it := n.disk[ti]; it != nil {
		n.used -= it.bytes
		delete(n.disk, ti)
		e.sched.DropReplica(n.spec.ID, e.d.titles[ti].id)
	}
}

// dropItem removes a title for a reason other than the node's Evictor
// (an order of the planner, a cancelled fill, a failed disk), which the
// Evictor hears through Recorder.Forget.
func (e *engine) dropItem(ni int, ti int32) {
	n := e.nodes[ni]
	if n.disk[ti] == nil {
		return
	}
	e.removeItem(ni, ti)
	if rec, ok := n.evictor.(smm.Recorder); ok {
		rec.Forget(e.d.titles[ti].id)
	}
}

// acquire gives f an origin channel now.
func (e *engine) acquire(f *fillJob) {
	e.cdp.active++
	e.res.PeakCDPTransfers = max(e.res.PeakCDPTransfers, e.cdp.active)
	if e.measuring() {
		e.res.OriginFetches++
		if f.prefetch {
			e.res.Prefetches++
		}
	}
	f.state, f.acquired = fillSetup, e.now
	setup := e.cfg.CDP.SetupDelay.Seconds()
	e.ev.push(e.now+setup, evFillFirst, f.id, 0)
	e.ev.push(e.now+setup+float64(f.bytes)*8/float64(e.cfg.CDP.ChannelBps), evFillDone, f.id, 0)
}

// releaseChannel frees f's channel and starts the next queued fill.
func (e *engine) releaseChannel() {
	e.cdp.active--
	for e.cdp.active < e.cfg.CDP.Channels && len(e.cdp.queue) > 0 {
		f := e.cdp.queue[0]
		e.cdp.queue[0] = nil
		e.cdp.queue = e.cdp.queue[1:]
		if f.state == fillQueued {
			e.acquire(f)
		}
	}
}

// fillFirst: the first bytes arrived, the waiting viewers play.
func (e *engine) fillFirst(f *fillJob) {
	if f.state != fillSetup {
		return
	}
	f.state = fillFlowing
	w := f.waiters
	f.waiters = nil
	for _, sid := range w {
		e.play(sid)
	}
}

// fillDone: the title is complete on the node.
func (e *engine) fillDone(f *fillJob) {
	if f.state != fillFlowing {
		return
	}
	f.state = fillDone
	if f.acquired >= e.warmup {
		e.res.OriginBytes += f.bytes
	}
	n := e.nodes[f.node]
	if !f.bypass {
		if it := n.disk[f.title]; it != nil && it.fill == f.id {
			it.fill = -1
		}
		e.sched.SetReplica(n.spec.ID, e.d.titles[f.title].id, false, f.bytes)
	}
	e.releaseChannel()
}

// cancelFill gives up a fill that has not got a channel.
func (e *engine) cancelFill(f *fillJob) {
	f.state = fillCancelled
	if !f.bypass {
		e.dropItem(f.node, f.title)
	}
}

// abortFill stops a fill because its node failed; the bytes already sent
// count as origin bytes.
func (e *engine) abortFill(f *fillJob) {
	switch f.state {
	case fillQueued:
	case fillSetup, fillFlowing:
		sent := (e.now - f.acquired - e.cfg.CDP.SetupDelay.Seconds()) * float64(e.cfg.CDP.ChannelBps) / 8
		if f.acquired >= e.warmup {
			e.res.OriginBytes += min(f.bytes, max(0, int64(sent)))
		}
		e.releaseChannel()
	default:
		return
	}
	f.state = fillCancelled
	f.waiters = nil
	if !f.bypass {
		e.dropItem(f.node, f.title)
	}
}

// planRound asks the planner for prefetches and evictions and carries them
// out: a prefetch needs a live node without the title, a free origin
// channel and disk room; an eviction a title not in use.
func (e *engine) planRound() {
	if _, ok := e.plan.(smm.NoPlanner); ok {
		return
	}
	view := &smm.ClusterView{Titles: map[string]smm.TitleInfo{}, OriginFree: e.cfg.CDP.Channels - e.cdp.active}
	for _, t := range e.d.titles {
		if t.avail <= e.now {
			view.Titles[t.id] = smm.TitleInfo{ID: t.id, Bytes: t.bytes, Bitrate: t.bitrate, Duration: t.dur}
		}
	}
	for i, n := range e.nodes {
		ln := e.sched.Nodes[i]
		nv := smm.NodeView{ID: n.spec.ID, Alive: e.sched.InService(ln), DiskBytes: n.spec.Capacity.DiskBytes,
			EgressBps: n.spec.Capacity.EgressBps, Utilization: ln.Utilization()}
		if e.planSites {
			nv.Site = e.siteNames[e.nodeSite[i]]
		}
		for _, ti := range sortedTitles(n.disk) {
			it := n.disk[ti]
			nv.Items = append(nv.Items, smm.Item{Title: e.d.titles[ti].id, Bytes: it.bytes, InUse: it.inUse(),
				LastAccess: at(it.last), Hits: it.hits, Filling: it.fill >= 0})
			if it.fill >= 0 {
				nv.Fills++
			}
		}
		view.Nodes = append(view.Nodes, nv)
	}
	byNode := map[string]int{}
	for i, n := range e.nodes {
		byNode[n.spec.ID] = i
	}
	meas := e.measuring()
	reject := func(a smm.Action) {
		if meas {
			e.res.PlanRejected++
		}
		if a.Kind == smm.Prefetch && e.rep != nil {
			e.rep.FillFailed(a.Node, a.Title, at(e.now)) // retried after a backoff
		}
	}
	for _, a := range e.plan.Plan(at(e.now), view) {
		ni, okN := byNode[a.Node]
		ti, okT := e.byID[a.Title]
		if !okN || !okT || e.d.titles[ti].avail > e.now {
			reject(a)
			continue
		}
		n := e.nodes[ni]
		switch a.Kind {
		case smm.Prefetch:
			if !n.alive || n.disk[ti] != nil || e.cdp.active >= e.cfg.CDP.Channels {
				reject(a)
				continue
			}
			if _, ok := e.startFill(ni, ti, true); !ok {
				reject(a)
				continue
			}
		case smm.Evict:
			it := n.disk[ti]
			if it == nil || it.inUse() {
				reject(a)
				continue
			}
			e.dropItem(ni, ti)
		default:
			reject(a)
			continue
		}
		if meas {
			e.res.PlacementMoves++
		}
	}
}

// sortedTitles returns the titles on a disk in index order.
func sortedTitles(disk map[int32]*item) []int32 {
	out := make([]int32, 0, len(disk))
	for ti := range disk {
		out = append(out, ti)
	}
	slices.Sort(out)
	return out
}
