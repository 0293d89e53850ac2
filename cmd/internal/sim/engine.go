package sim

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"vodcluster/lsm"
	"vodcluster/smm"
)

// epoch is the wall-clock time of the simulation's second 0 as lsm and
// smm see it (a Monday, 00:00 UTC).
var epoch = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

func at(t float64) time.Time { return epoch.Add(time.Duration(t * float64(time.Second))) }

// session is one viewer's playback on a node.
type session struct {
	gen     uint32
	active  bool
	playing bool
	orig    bool // an original request (not a resume after a failure)
	bypass  bool // served by a fill the node does not keep (no disk item)
	res     lsm.Reservation
	title   int32
	sub     int32
	asked   float64 // when the viewer asked
	placed  float64 // when the request reached its node
	watch   float64 // seconds to watch once playing
	endAt   float64
	fill    int32 // the fill it waits for, -1 when none
	trace   int32 // its record in Result.Trace, -1 when none
	slot    int   // index in its node's session list
}

// pending is a request waiting in the lsm queue.
type pending struct {
	req  request
	orig bool
}

// engine runs one policy over the demand.
type engine struct {
	cfg    *Config
	d      *demand
	sched  *lsm.Scheduler
	plan   smm.Planner
	store  *smm.Storage
	rep    *smm.Replicator // the planner when it is one, else nil
	warmup float64         // seconds not measured at the start
	ev     events
	nodes  []*node
	byID   map[string]int32 // title id -> index
	subs   []string         // subscriber names, made on first use
	now    float64
	res    Result
	series *LoadSeries

	sessions []session
	free     []int32
	waiting  map[*lsm.Ticket]pending
	resumes  []pending
	deadline float64 // time of the pending evDeadline, +Inf when none

	cdp      cdpState
	fills    []*fillJob
	decision []int64 // ns per Admit

	// Sites (sites.go): their count (0 without), each node's site index
	// (-1 without), their names, and whether the scheduler and the
	// planner are told them.
	sites                 int
	nodeSite              []int
	siteNames             []string
	schedSites, planSites bool
}

func newEngine(cfg *Config, d *demand, policy string) (*engine, error) {
	sched, err := lsm.New(cfg.lsmConfig(policy))
	if err != nil {
		return nil, err
	}
	st, err := smm.NewStorage(cfg.StoragePolicy, cfg.Storage)
	if err != nil {
		return nil, err
	}
	e := &engine{
		cfg: cfg, d: d, sched: sched, plan: st.Planner, store: st, rep: st.Replicator,
		warmup: float64(cfg.WarmupDays) * day,
		byID:   make(map[string]int32, len(d.titles)), subs: make([]string, cfg.Demand.Subscribers),
		waiting: map[*lsm.Ticket]pending{}, deadline: math.Inf(1),
		decision: make([]int64, 0, len(d.reqs)),
	}
	if cfg.Planner != nil {
		e.plan, e.rep = cfg.Planner(), nil
		if r, ok := e.plan.(*smm.Replicator); ok {
			e.rep = r
		}
	}
	for i, t := range d.titles {
		e.byID[t.id] = int32(i)
	}
	e.res = Result{Policy: policy, StoragePolicy: st.Name, WarmupDays: cfg.WarmupDays}
	if s := &cfg.Sites; s.on() {
		aware := s.aware()[0]
		e.sites = s.Count
		e.schedSites = aware != SiteAwareNone
		e.planSites = aware == SiteAwareAll
		for k := 0; k < s.Count; k++ {
			e.siteNames = append(e.siteNames, siteName(k))
		}
		e.res.SiteFigures = &SiteFigures{Sites: s.Count, SiteAware: aware, SiteLocal: s.Local, SiteOnly: s.Only}
	}
	if err := e.buildNodes(); err != nil {
		return nil, err
	}
	e.series = &LoadSeries{Policy: policy, Nodes: make([]string, len(e.nodes)), Util: make([][]float32, len(e.nodes))}
	for i, n := range e.nodes {
		e.series.Nodes[i] = n.spec.ID
	}
	return e, nil
}

// buildNodes creates the nodes: disks in proportion to their class's
// DiskWeight, together DiskShare of the initial catalog's bytes.
func (e *engine) buildNodes() error {
	wsum := 0.0
	for _, k := range e.cfg.Cluster.Nodes {
		wsum += float64(k.Count) * k.DiskWeight
	}
	total := e.cfg.Cluster.DiskShare * float64(e.d.initialBytes)
	if w := e.checkDisks(total, wsum); w != "" {
		e.res.Warnings = append(e.res.Warnings, w)
	}
	for _, k := range e.cfg.Cluster.Nodes {
		for j := 0; j < k.Count; j++ {
			spec := lsm.NodeSpec{
				ID:     fmt.Sprintf("node-%02d", len(e.nodes)+1),
				Weight: k.Weight,
				Capacity: lsm.Capacity{
					EgressBps: k.EgressBps,
					DiskBytes: int64(total * k.DiskWeight / wsum),
				},
			}
			site := -1
			if e.sites > 0 {
				site = len(e.nodes) % e.sites // round robin over the classes
				if e.schedSites {
					spec.Site = e.siteNames[site]
				}
			}
			e.nodeSite = append(e.nodeSite, site)
			if _, err := e.sched.AddNode(spec, at(0)); err != nil {
				return err
			}
			e.res.DiskBytes += spec.Capacity.DiskBytes
			e.nodes = append(e.nodes, &node{spec: spec, alive: true, disk: map[int32]*item{}, evictor: e.store.Evictor(spec.ID)})
		}
	}
	return nil
}

// checkDisks returns a warning for a cluster whose largest disk (of total
// bytes over the classes' disk weights, wsum) holds none of the catalog's
// titles: every request is refused for no disk room, and the figures say
// nothing of the policies. "" otherwise.
func (e *engine) checkDisks(total, wsum float64) string {
	if len(e.d.titles) == 0 {
		return ""
	}
	largest := 0.0
	for _, k := range e.cfg.Cluster.Nodes {
		if k.Count > 0 { // a class of no node has no disk
			largest = max(largest, total*k.DiskWeight/wsum)
		}
	}
	smallest := e.d.titles[0].bytes
	for _, t := range e.d.titles {
		smallest = min(smallest, t.bytes)
	}
	if int64(largest) < smallest {
		return fmt.Sprintf("the largest node's disk, %d bytes (cluster.disk_share %g of the catalog's %d bytes at the start, over %d nodes), holds no title (the smallest is %d bytes): every request is refused; give fewer nodes, more titles or a larger disk_share",
			int64(largest), e.cfg.Cluster.DiskShare, e.d.initialBytes, e.nodeCount(), smallest)
	}
	return ""
}

// nodeCount is the number of nodes of the cluster's classes.
func (e *engine) nodeCount() int {
	n := 0
	for _, k := range e.cfg.Cluster.Nodes {
		n += k.Count
	}
	return n
}

func (e *engine) sub(i int32) string {
	if e.subs[i] == "" {
		e.subs[i] = "s" + strconv.Itoa(int(i))
	}
	return e.subs[i]
}

// run simulates the whole demand and returns the figures.
func (e *engine) run() (Result, error) {
	start := time.Now()
	end := float64(e.cfg.Days) * day
	for k, o := range e.d.outages {
		e.ev.push(o.down, evFail, int32(k), 0)
		e.ev.push(o.up, evReturn, int32(k), 0)
	}
	e.ev.push(0, evSample, 0, 0)
	e.ev.push(e.cfg.PlanInterval.Seconds(), evPlan, 0, 0)
	next := 0
	for {
		// Arrivals are pre-sorted; merge them with the event heap.
		if next < len(e.d.reqs) && (e.ev.len() == 0 || e.d.reqs[next].t <= e.ev.peek()) {
			r := e.d.reqs[next]
			next++
			e.now = r.t
			if err := e.ask(r, true, true); err != nil {
				return Result{}, err
			}
			continue
		}
		if e.ev.len() == 0 {
			break
		}
		x := e.ev.pop()
		if x.t > end && !settles(x.kind) {
			continue // nothing new after the end; sessions and fills run out
		}
		e.now = x.t
		if err := e.handle(x); err != nil {
			return Result{}, err
		}
	}
	if err := e.finish(time.Since(start)); err != nil {
		return Result{}, err
	}
	return e.res, nil
}

// settles reports whether an event of kind k is still handled after the
// simulated days end: those that end sessions and fills already begun, and
// those that decide requests already asked (a viewer in the admission
// queue at its deadline, one waiting for an origin channel at its
// patience), so every request asked is admitted or refused.
func settles(k evKind) bool {
	switch k {
	case evEnd, evFillFirst, evFillDone, evDeadline, evPatience:
		return true
	}
	return false
}

func (e *engine) handle(x event) error {
	switch x.kind {
	case evResume:
		p := e.resumes[x.a]
		return e.ask(p.req, p.orig, false)
	case evEnd:
		if s := &e.sessions[x.a]; s.active && s.gen == x.gen {
			e.endSession(x.a)
			e.pump()
		}
	case evPatience:
		if s := &e.sessions[x.a]; s.active && s.gen == x.gen && s.fill >= 0 && e.fills[s.fill].state == fillQueued {
			if e.counted(s.orig, s.asked) {
				e.res.RefusedNoCopy++
				e.res.Refused++
				e.trace(s.asked, s.title, -1, false)
			}
			e.endSession(x.a)
			e.pump()
		}
	case evFillFirst:
		e.fillFirst(e.fills[x.a])
	case evFillDone:
		e.fillDone(e.fills[x.a])
		e.pump()
	case evDeadline:
		e.deadline = math.Inf(1)
		e.pump()
	case evFail:
		e.fail(e.d.outages[x.a].node)
		e.pump()
	case evReturn:
		n := e.nodes[e.d.outages[x.a].node]
		n.alive = true
		if _, err := e.sched.AddNode(n.spec, at(e.now)); err != nil {
			return err
		}
		e.pump()
	case evSample:
		e.sample()
		e.ev.push(e.now+e.cfg.SampleInterval.Seconds(), evSample, 0, 0)
	case evPlan:
		e.planRound()
		e.ev.push(e.now+e.cfg.PlanInterval.Seconds(), evPlan, 0, 0)
	}
	return nil
}

// ask submits a request to the scheduler, timing the decision. orig is
// false for a viewer resuming after a failure cut off its playback (its
// request was already counted as admitted); fresh is true the first time
// a request is asked.
func (e *engine) ask(r request, orig, fresh bool) error {
	t := &e.d.titles[r.title]
	req := lsm.Request{Title: t.id, Client: e.sub(r.sub), Bitrate: t.bitrate, Bytes: t.bytes}
	if vs := e.viewerSite(r.sub); vs < 0 || !e.planSites {
		e.plan.Observe(t.id, at(e.now))
	} else {
		smm.Observe(e.plan, t.id, e.siteNames[vs], at(e.now))
	}
	if vs := e.viewerSite(r.sub); vs >= 0 && e.schedSites {
		req.Site, req.SiteOnly = e.siteNames[vs], e.cfg.Sites.Only
	}
	if fresh && e.counted(true, r.t) {
		e.res.Requested++
	}
	wall := time.Now()
	tk, err := e.sched.Admit(req, at(e.now+e.cfg.Scheduler.QueueWait.Seconds()), at(e.now))
	e.decision = append(e.decision, time.Since(wall).Nanoseconds())
	if err != nil {
		return fmt.Errorf("sim: admit %s: %w", t.id, err)
	}
	if !tk.Done {
		e.waiting[tk] = pending{req: r, orig: orig}
		e.armDeadline()
		return nil
	}
	e.decided(tk, r, orig)
	return nil
}

// decided handles a finished ticket: a placement or a refusal.
func (e *engine) decided(tk *lsm.Ticket, r request, orig bool) {
	if tk.Err != nil {
		if e.counted(orig, r.asked()) {
			e.res.Refused++
			e.trace(r.asked(), r.title, -1, false)
		}
		return
	}
	e.granted(tk.Res, r, orig)
}

// pump retries the lsm queue after capacity may have freed.
func (e *engine) pump() {
	if e.sched.Queued() == 0 {
		return
	}
	for _, tk := range e.sched.Pump(at(e.now)) {
		p := e.waiting[tk]
		delete(e.waiting, tk)
		e.decided(tk, p.req, p.orig)
	}
	e.armDeadline()
}

func (e *engine) armDeadline() {
	d, ok := e.sched.NextDeadline()
	if !ok {
		return
	}
	t := d.Sub(epoch).Seconds() + 1e-6 // at(t) must not round below the deadline
	if t < e.deadline {
		e.deadline = t
		e.ev.push(t, evDeadline, 0, 0)
	}
}

// counted reports whether the outcome of a request first asked at asked
// is counted: an original request (not a resume after a failure) asked
// after the warm-up.
func (e *engine) counted(orig bool, asked float64) bool { return orig && asked >= e.warmup }

// measuring reports whether events now are measured (after the warm-up).
func (e *engine) measuring() bool { return e.now >= e.warmup }

// trace records the outcome of a counted request: the time it reached its
// node (or was refused), and returns the record's index.
func (e *engine) trace(t float64, ti int32, nodeIdx int, fill bool) int32 {
	e.res.Trace = append(e.res.Trace, TraceRecord{T: t, Title: e.d.titles[ti].id, Bytes: e.d.titles[ti].bytes, Node: nodeIdx, Fill: fill})
	return int32(len(e.res.Trace) - 1)
}

// granted starts a session on the node lsm chose: at once when the title
// is there or its fill has begun, else once its fill gets a channel.
func (e *engine) granted(res lsm.Reservation, r request, orig bool) {
	n := e.nodes[res.Node]
	if n.spec.ID != res.NodeID || !n.alive {
		e.res.Inconsistencies++
	}
	it := n.disk[r.title]
	if (it == nil) != res.Fill {
		e.res.Inconsistencies++ // lsm's replica view and the disk disagree
	}
	fillIdx := int32(-1)
	t := &e.d.titles[r.title]
	replica := it == nil && len(e.sched.Holders(t.id)) > 1
	if rec, ok := n.evictor.(smm.Recorder); ok {
		rec.Record(t.id, t.bytes, at(e.now)) // before Victims, hit or fill
	}
	bypass := false
	if it == nil {
		f, ok := e.startFill(res.Node, r.title, false)
		if !ok {
			if e.counted(orig, r.asked()) {
				e.res.RefusedNoCopy++
				e.res.Refused++
				e.trace(r.asked(), r.title, -1, false)
			}
			e.sched.Release(res)
			e.sched.DropReplica(n.spec.ID, e.d.titles[r.title].id)
			return
		}
		it, fillIdx = n.disk[r.title], f
		bypass = e.fills[f].bypass
		if replica && e.measuring() {
			e.res.ReplicaFills++
			e.res.ReplicaFillBytes += t.bytes
		}
	} else if it.fill >= 0 {
		fillIdx = it.fill
	}
	if !bypass {
		it.users++
		it.last = e.now
		it.hits++
	}
	sid := e.newSession()
	s := &e.sessions[sid]
	*s = session{gen: s.gen + 1, active: true, orig: orig, bypass: bypass, res: res, title: r.title, sub: r.sub,
		asked: r.asked(), placed: e.now, watch: r.watch, fill: -1, trace: -1}
	s.slot = len(n.sessions)
	n.sessions = append(n.sessions, sid)
	// The QoS promise, checked on the simulator's own sum of its sessions'
	// bit/s (not on lsm's ledger, which admission itself enforces).
	n.bps += res.Bitrate
	if n.bps > n.spec.Capacity.EgressBps {
		e.res.QoSViolations++
	}
	if fillIdx >= 0 && e.fills[fillIdx].state < fillFlowing {
		f := e.fills[fillIdx]
		s.fill = fillIdx
		f.waiters = append(f.waiters, sid)
		if f.state == fillQueued {
			e.ev.push(e.now+e.cfg.CDP.FillWait.Seconds(), evPatience, sid, s.gen)
		}
		return
	}
	e.play(sid)
}

// play starts playback of a session now.
func (e *engine) play(sid int32) {
	s := &e.sessions[sid]
	s.playing, s.fill = true, -1
	s.endAt = e.now + s.watch
	switch {
	case e.counted(s.orig, s.asked):
		e.res.Admitted++
		s.trace = e.trace(s.placed, s.title, s.res.Node, s.res.Fill)
		if e.sites > 0 && e.nodeSite[s.res.Node] != e.viewerSite(s.sub) {
			e.res.SessionsAcrossSites++
		}
	case !s.orig && e.measuring():
		// A viewer resuming after a failure: the demand it serves (and
		// any fill it needs) has its own row in the trace.
		e.res.Resumed++
		s.trace = e.trace(s.placed, s.title, s.res.Node, s.res.Fill)
		e.res.Trace[s.trace].Resumed = true
	}
	e.ev.push(s.endAt, evEnd, sid, s.gen)
}

func (e *engine) newSession() int32 {
	if k := len(e.free); k > 0 {
		sid := e.free[k-1]
		e.free = e.free[:k-1]
		return sid
	}
	e.sessions = append(e.sessions, session{})
	return int32(len(e.sessions) - 1)
}

// endSession releases a session's reservation and its hold on the title.
func (e *engine) endSession(sid int32) {
	s := &e.sessions[sid]
	n := e.nodes[s.res.Node]
	e.sched.Release(s.res)
	n.bps -= s.res.Bitrate
	if s.playing {
		e.streamed(s)
		if s.trace >= 0 {
			tr := &e.res.Trace[s.trace]
			tr.End = e.now
			if s.bypass { // streamed through, never on the disk: an instant for the bound
				tr.End = tr.T
			}
		}
		if e.rep != nil {
			t := &e.d.titles[s.title]
			e.rep.SessionEnded(t.id, e.now-(s.endAt-s.watch), t.dur, at(e.now))
		}
	}
	if it := n.disk[s.title]; it != nil && !s.bypass {
		it.users--
	}
	last := n.sessions[len(n.sessions)-1]
	n.sessions[s.slot] = last
	e.sessions[last].slot = s.slot
	n.sessions = n.sessions[:len(n.sessions)-1]
	if s.fill >= 0 {
		f := e.fills[s.fill]
		for k, w := range f.waiters {
			if w == sid {
				f.waiters = append(f.waiters[:k], f.waiters[k+1:]...)
				break
			}
		}
		if len(f.waiters) == 0 && !f.prefetch && f.state == fillQueued {
			e.cancelFill(f)
		}
	}
	s.active, s.playing = false, false
	s.gen++
	e.free = append(e.free, sid)
}

// fail takes node i down: its fills stop, its viewers are cut off and ask
// again two seconds later for what they had left to watch.
func (e *engine) fail(i int) {
	n := e.nodes[i]
	if !n.alive {
		return
	}
	n.alive = false
	e.sched.MarkDead(n.spec.ID)
	for _, ti := range sortedTitles(n.disk) {
		if it := n.disk[ti]; it != nil && it.fill >= 0 {
			e.abortFill(e.fills[it.fill])
		}
	}
	for _, f := range n.passing {
		e.abortFill(e.fills[f]) // those done or cancelled are left alone
	}
	n.passing = n.passing[:0]
	for len(n.sessions) > 0 {
		sid := n.sessions[len(n.sessions)-1]
		s := &e.sessions[sid]
		left := s.watch
		if s.playing {
			left = s.endAt - e.now
		}
		// A viewer that never played still has its request's outcome open:
		// the resumed request decides it.
		p := pending{req: request{t: e.now + 2, first: s.asked, title: s.title, sub: s.sub, watch: left}, orig: s.orig && !s.playing}
		if s.playing && e.measuring() {
			e.res.Interrupted++
		}
		e.endSession(sid)
		if left >= 10 || p.orig {
			p.req.watch = max(left, 10)
			e.resumes = append(e.resumes, p)
			e.ev.push(p.req.t, evResume, int32(len(e.resumes)-1), 0)
		}
	}
	if !e.cfg.Failures.KeepDisk {
		for _, ti := range sortedTitles(n.disk) {
			e.dropItem(i, ti)
		}
	}
}
