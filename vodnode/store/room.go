package store

import (
	"fmt"
	"os"
	"sort"
	"time"

	"vodcluster/proto/durtext"
	"vodcluster/smm"
)

// roomLocked checks that need more bytes for title id can fit, by
// removing the partials of other titles not expected by a viewer on its
// way (Expect), evicting titles neither held, filling, protected nor
// expected and, for a fill on demand (not prefetch), stopping the
// prefetches a viewer does not need (preemptibleLocked), without doing
// any of it yet (a fill makes room when the origin sends its first bytes:
// makeRoom): in the quota, and on the file system holding the titles,
// whose free space (statfs) may be less than the quota's room (disk_bytes
// above the disk's size, other files on it). The error wraps ErrNoSpace.
func (s *Store) roomLocked(need int64, id string, prefetch bool) error {
	if s.cfg.DiskBytes > 0 && need > s.cfg.DiskBytes {
		return fmt.Errorf("%w: title of %d bytes, quota %d", ErrNoSpace, need, s.cfg.DiskBytes)
	}
	s.expect.prune(s.cfg.Now())
	var evictable int64
	for _, t := range s.titles {
		if t.refs == 0 && !t.filling && !s.keptLocked(t.meta.ID) {
			evictable += t.meta.Size
		}
		if !prefetch && s.preemptibleLocked(t) {
			evictable += t.meta.Size // its fill's room, and then its partial
		}
	}
	freeable := evictable + s.freeablePartialBytesLocked(id)
	if s.cfg.DiskBytes > 0 {
		if over := s.used + need - s.cfg.DiskBytes; over > freeable {
			return fmt.Errorf("%w: %d bytes needed, %d used of %d, the rest is in use", ErrNoSpace, need, s.used, s.cfg.DiskBytes)
		}
	}
	if short, free, ok := s.fsShortLocked(need); ok && short > freeable {
		return fmt.Errorf("%w: %d bytes needed, the file system holding the titles has %d free (less the fills in progress still to write) and %d can be freed, the rest is in use",
			ErrNoSpace, need, free, freeable)
	}
	return nil
}

// preemptibleLocked reports whether t is a fill that a fill on demand may
// stop to take its room (s.mu held): a prefetch (ordered ahead of demand)
// no reader holds, no viewer on its way expects (Expect) and no pin
// protects (SetProtected), whose transfer under way, if any, was asked of
// the origin as a prefetch (not Title.askedFill). The manager is told
// (Status.Preemptible): it counts its bytes as room, and the fill as one
// that gives its origin channel to a viewer's fill.
func (s *Store) preemptibleLocked(t *Title) bool {
	return t.filling && t.prefetch && t.refs == 0 && !t.preempted && !t.evicted && t.done != nil && !t.askedFill && !s.keptLocked(t.meta.ID)
}

// fsShortLocked returns the bytes the file system holding the titles
// lacks for the fills in progress to write the rest of their titles,
// plus extra bytes (s.mu held): those bytes less its free bytes (fsAvail),
// and the free bytes; ok is false when they are not known.
func (s *Store) fsShortLocked(extra int64) (short, free int64, ok bool) {
	if s.fsAvail == nil {
		return 0, 0, false
	}
	if free, ok = s.fsAvail(); !ok {
		return 0, 0, false
	}
	need := extra
	for _, t := range s.titles {
		if t.filling {
			need += max(t.meta.Size-t.View().Index.Size, 0)
		}
	}
	return need - free, free, true
}

// makeRoom removes partials (oldest first; never one of a title expected
// by a viewer on its way: Expect), then evicts titles (never one held,
// filling, protected or expected), until
// the stored and filling titles (whose full sizes s.used counts) and the
// partials left fit in the quota, and the file system has room for the
// bytes the fills in progress have still to write (fsShortLocked): the
// node reports the free disk, file system included, to the manager
// (vodnode's load report), and a fill counted on it must not fail
// writing. When that is not enough and t is a fill a viewer holds (a
// fill on demand whose viewers all left, like a prefetch, stops none), it
// first stops prefetches no viewer needs
// (preemptibleLocked; fewest bytes stored first; none when all of them
// would not make the room), waits for their fills to end (their bytes
// become partials) and counts again. The fill t
// calls it when the origin has sent its first bytes, so that a fill the
// origin cannot serve removes nothing. The error wraps ErrNoSpace when
// the titles in use leave too little.
func (s *Store) makeRoom(t *Title) error {
	for round := 0; ; round++ {
		stopped, err := s.makeRoomOnce(t, round < maxPreemptRounds)
		if err != nil || len(stopped) == 0 {
			return err
		}
		wait := time.NewTimer(preemptWait)
		for _, done := range stopped {
			select {
			case <-done:
			case <-t.ctx.Done():
				wait.Stop()
				return t.ctx.Err()
			case <-wait.C:
				return fmt.Errorf("%w: prefetches stopped for room did not end within %s", ErrNoSpace, durtext.Written(preemptWait))
			}
		}
		wait.Stop()
	}
}

// maxPreemptRounds bounds the rounds of makeRoom that stop prefetches (a
// round's room may be taken by another fill before the next one counts
// it); preemptWait bounds its wait for the stopped fills to end (they end
// at their next read from the origin or write to disk).
const (
	maxPreemptRounds = 3
	preemptWait      = 10 * time.Second
)

// makeRoomOnce is one round of makeRoom: it makes room by removing
// partials and evicting titles, or, when that cannot make enough, for a
// fill on demand and when preempt allows, stops prefetches and returns
// the channels their ends close (nothing removed yet).
func (s *Store) makeRoomOnce(t *Title, preempt bool) (stopped []chan struct{}, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var over int64
	if s.cfg.DiskBytes > 0 {
		over = s.used - s.cfg.DiskBytes
	}
	short, free, fsKnown := s.fsShortLocked(0)
	over = max(over, short) // each byte removed counts in both
	if over <= 0 {
		return nil, nil
	}
	if over = s.dropPartialsLocked(over, "room for a fill"); over <= 0 {
		return nil, nil
	}
	s.expect.prune(s.cfg.Now())
	items := make([]smm.Item, 0, len(s.titles))
	var evictable int64
	for _, t := range s.titles {
		// A title a viewer is on its way for (Expect) is as good as in use.
		it := smm.Item{
			Title: t.meta.ID, Bytes: t.meta.Size, InUse: t.refs > 0 || t.filling || s.expect.byTitle[t.meta.ID] > 0,
			LastAccess: t.lastAccess, Pinned: s.protected[t.meta.ID],
		}
		if !it.InUse && !it.Pinned {
			evictable += it.Bytes
		}
		items = append(items, it)
	}
	if demand := t.refs > 0; demand && preempt && over > evictable {
		if stopped = s.preemptLocked(over - evictable); len(stopped) > 0 {
			return stopped, nil
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Title < items[j].Title })
	victims, ok := s.cfg.Evictor.Victims(items, over, s.cfg.Now())
	if !ok {
		if fsKnown {
			return nil, fmt.Errorf("%w: %d bytes still to free (quota %d; the file system holding the titles has %d free, less the fills in progress still to write), the rest is in use",
				ErrNoSpace, over, s.cfg.DiskBytes, free)
		}
		return nil, fmt.Errorf("%w: %d bytes over the quota of %d, the rest is in use", ErrNoSpace, over, s.cfg.DiskBytes)
	}
	for _, id := range victims {
		s.log.Info("evicting title to make room", "title", id, "policy", s.cfg.Evictor.Name())
		s.removeLocked(s.titles[id])
	}
	return nil, nil
}

// preemptLocked stops prefetches no viewer needs (preemptibleLocked),
// those with the fewest bytes stored first (they lose the least should
// their partials go too), until their titles' sizes cover need bytes, and
// returns the channels their fills close when they end. It stops none
// when all of them together do not cover need: the fill would fail for
// want of room all the same, and the prefetches would be lost for nothing.
func (s *Store) preemptLocked(need int64) []chan struct{} {
	var cands []*Title
	var room int64
	for _, t := range s.titles {
		if s.preemptibleLocked(t) {
			cands = append(cands, t)
			room += t.meta.Size
		}
	}
	if room < need {
		return nil
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i].View().Index.Size, cands[j].View().Index.Size
		if a != b {
			return a < b
		}
		return cands[i].meta.ID < cands[j].meta.ID
	})
	var stopped []chan struct{}
	for _, c := range cands {
		if need <= 0 {
			break
		}
		c.preempted, c.stopped = true, true
		c.cancel()
		stopped = append(stopped, c.done)
		need -= c.meta.Size
	}
	return stopped
}

// Evict removes title id from the disk, or its partial when only that is
// kept. Errors wrap ErrUnknownTitle (neither stored nor partial) or
// ErrInUse (held by a reader or filling).
func (s *Store) Evict(id string) error {
	_, _, err := s.evict(id, false)
	return err
}

// EvictOrCancel is the operator's eviction: as Evict, and a prefetch
// filling that no viewer needs (the one a fill on demand would preempt:
// preemptibleLocked, Status.Preemptible) is cancelled too: its transfer
// stopped, its bytes dropped (no partial kept of an evicted title), the
// title gone from Titles at once and its room freed when the fill has
// ended (at its next read from the origin or write to disk; done is
// closed then). cancelled reports that it cancelled such a fill (done is
// nil otherwise). Errors wrap ErrUnknownTitle, or ErrInUse while a reader
// holds the title (an eviction never cuts a playing session), a viewer is
// on its way for it (Expect) or it is pinned (SetProtected), or for a
// fill on demand, or a prefetch whose transfer under way a viewer asked
// for (Title.askedFill).
func (s *Store) EvictOrCancel(id string) (cancelled bool, done <-chan struct{}, err error) {
	return s.evict(id, true)
}

func (s *Store) evict(id string, cancelPrefetch bool) (bool, <-chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.titles[id]
	if !ok {
		if p := s.partials[id]; p != nil {
			s.dropPartialLocked(p, "evicted")
			return false, nil, nil
		}
		return false, nil, fmt.Errorf("%w: %q not stored", ErrUnknownTitle, id)
	}
	if cancelPrefetch && s.preemptibleLocked(t) {
		// As preemptLocked stops it for a fill on demand; its end
		// (failFill, errCancelled) drops its bytes and frees its room.
		t.evicted, t.stopped = true, true
		t.cancel()
		s.log.Info("prefetch cancelled by the operator's eviction", "title", id, "stored_bytes", t.View().Index.Size, "size_bytes", t.meta.Size)
		return true, t.done, nil
	}
	if t.refs > 0 || t.filling {
		return false, nil, fmt.Errorf("%w: %q", ErrInUse, id)
	}
	s.removeLocked(t)
	return false, nil, nil
}

func (s *Store) removeLocked(t *Title) {
	if t == nil || t.removed {
		return
	}
	delete(s.titles, t.meta.ID)
	s.used -= t.meta.Size
	t.removed = true
	if t.refs == 0 && t.file != nil {
		t.file.Close()
	}
	if !t.filling {
		os.Remove(s.path(t.meta.ID, ".ts"))
		os.Remove(s.path(t.meta.ID, ".idx"))
	}
}
