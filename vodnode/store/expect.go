package store

import (
	"container/heap"
	"time"
)

// MaxExpected is how many viewers on their way (Expect) a Store keeps
// titles for at once. Past it, the viewer whose deadline comes first is
// forgotten to take the new one (its title is then evictable again, as
// before the manager said anything); a node is sent one per admission
// still to arrive, so it is reached only by a flood far beyond what the
// node could serve. About 200 bytes each (its session id and title, its
// map and heap entries): about 10 MB at the cap.
const MaxExpected = 50_000

// MaxExpectWait bounds how long one Expect keeps a title, counted on the
// node's own clock from when the node hears it: the manager's deadline is
// an absolute Unix time read against the node's wall clock, so a node
// whose clock is behind the manager's would otherwise keep the title for
// as long as the skew on top (hours behind: hours kept). The manager's
// deadline is its token's expiry plus the no-show grace, 70 s by default;
// a token_ttl above MaxExpectWait keeps the title MaxExpectWait only. A
// node whose clock is ahead of the manager's by more than the deadline's
// distance keeps nothing (Expect reports false), as it refuses the
// viewer's token then anyway (expired on its clock).
const MaxExpectWait = 10 * time.Minute

// expected is one viewer on its way to the node: admission session
// session of title, expected until until.
type expected struct {
	session string
	title   string
	until   time.Time
	index   int // in expectSet.order
}

// expectSet is the viewers on their way (Store.Expect): by session, with
// the count per title the eviction checks and a min-heap by deadline to
// prune them and to drop the one ending first at MaxExpected. The zero
// value is empty. Guarded by Store.mu.
type expectSet struct {
	bySession map[string]*expected
	byTitle   map[string]int
	order     expectHeap
}

// expectHeap orders the viewers on their way by deadline, earliest
// first (container/heap).
type expectHeap []*expected

func (h expectHeap) Len() int           { return len(h) }
func (h expectHeap) Less(i, j int) bool { return h[i].until.Before(h[j].until) }
func (h expectHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *expectHeap) Push(x any) {
	e := x.(*expected)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *expectHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// add records e, replacing the entry of its session (a new token for the
// same viewer: its title and deadline), dropping the one whose deadline
// comes first when MaxExpected are kept.
func (x *expectSet) add(session, title string, until time.Time) {
	if x.bySession == nil {
		x.bySession = map[string]*expected{}
		x.byTitle = map[string]int{}
	}
	if e := x.bySession[session]; e != nil {
		x.untitle(e.title)
		e.title, e.until = title, until
		x.byTitle[title]++
		heap.Fix(&x.order, e.index)
		return
	}
	for len(x.order) >= MaxExpected {
		x.remove(x.order[0])
	}
	e := &expected{session: session, title: title, until: until}
	x.bySession[session] = e
	x.byTitle[title]++
	heap.Push(&x.order, e)
}

// remove forgets e.
func (x *expectSet) remove(e *expected) {
	heap.Remove(&x.order, e.index)
	delete(x.bySession, e.session)
	x.untitle(e.title)
}

// untitle takes one viewer off title's count.
func (x *expectSet) untitle(title string) {
	if n := x.byTitle[title] - 1; n > 0 {
		x.byTitle[title] = n
	} else {
		delete(x.byTitle, title)
	}
}

// prune forgets the viewers whose deadline is not after now.
func (x *expectSet) prune(now time.Time) {
	for len(x.order) > 0 && !x.order[0].until.After(now) {
		x.remove(x.order[0])
	}
}

// Expect keeps title, or the partial of it kept to resume its fill (the
// fill this viewer starts resumes it rather than fetch the title from
// its first byte), from the store's own eviction (the room made for a
// fill: makeRoom, and the check before a fill starts, both for the quota
// and for the file system's free space; a partial not resumed within
// Config.PartialMaxAge still goes, and Usage still counts its bytes among
// the partials, which the node reports as free) for a viewer the manager
// has just sent to the node (the manager's ExpectCommand), admission session
// session, until the session starts here (Unexpect), the manager ends it
// (Unexpect), or until passes (read on the store's wall clock when Expect
// is called, then counted on its monotonic clock; at most MaxExpectWait
// from the call), whichever comes first. A new Expect for
// the same session replaces its title and deadline. An until not after
// the store's clock (Config.Now), or an empty session or title, is
// ignored: it reports false. At most MaxExpected are kept (the one whose
// deadline comes first is dropped for a new one). The title need not be
// stored: a viewer of a title the node lacks or fills is harmless. Evict,
// the manager's own order, is not affected.
func (s *Store) Expect(session, title string, until time.Time) bool {
	if session == "" || title == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	// The deadline is kept as a distance on the store's clock (with
	// time.Now, its monotonic reading): a step of the wall clock after
	// Expect moves it no more, and it is at most MaxExpectWait away.
	wait := until.Sub(now)
	if wait <= 0 {
		return false
	}
	s.expect.prune(now)
	s.expect.add(session, title, now.Add(min(wait, MaxExpectWait)))
	s.watchedLocked(s.titles[title])
	return true
}

// Unexpect ends Expect's protection for the admission sessions sessions:
// each has started on the node (its title is then held for it), was
// refused here, or was ended by the manager. Unknown ones are ignored.
func (s *Store) Unexpect(sessions ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range sessions {
		if e := s.expect.bySession[id]; e != nil {
			s.expect.remove(e)
		}
	}
}

// Expecting returns how many viewers on their way (Expect) keep title
// from eviction now (Node.ExpectedViewers, tests).
func (s *Store) Expecting(title string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expect.prune(s.cfg.Now())
	return s.expect.byTitle[title]
}

// keptLocked reports whether the store's own eviction must keep title id
// (s.mu held, and Expect's deadlines pruned): the manager protects it
// (SetProtected) or a viewer is on its way for it (Expect).
func (s *Store) keptLocked(id string) bool {
	return s.protected[id] || s.expect.byTitle[id] > 0
}
