package store

import (
	"fmt"
	"os"
	"sort"

	"vodcluster/smm"
)

// roomLocked checks that need more bytes for title id can fit in the quota
// by removing the partials of other titles and evicting titles neither
// held, filling nor protected, without removing them yet (a fill makes
// room when the origin sends its first bytes: makeRoom).
func (s *Store) roomLocked(need int64, id string) error {
	if s.cfg.DiskBytes <= 0 {
		return nil
	}
	if need > s.cfg.DiskBytes {
		return fmt.Errorf("%w: title of %d bytes, quota %d", ErrNoSpace, need, s.cfg.DiskBytes)
	}
	over := s.used + need - s.cfg.DiskBytes - s.partialBytesLocked(id)
	for _, t := range s.titles {
		if over <= 0 {
			return nil
		}
		if t.refs == 0 && !t.filling && !s.protected[t.meta.ID] {
			over -= t.meta.Size
		}
	}
	if over > 0 {
		return fmt.Errorf("%w: %d bytes needed, %d used of %d, the rest is in use", ErrNoSpace, need, s.used, s.cfg.DiskBytes)
	}
	return nil
}

// makeRoom removes partials (oldest first), then evicts titles, until
// the stored and filling titles (whose full sizes s.used counts) and the
// partials left fit in the quota; it also removes partials while the file
// system lacks room for the bytes the fills in progress have still to
// write (fsRoomLocked). A fill calls it when the origin has sent its first
// bytes, so that a fill the origin cannot serve removes nothing.
func (s *Store) makeRoom() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fsRoomLocked()
	if s.cfg.DiskBytes <= 0 {
		return nil
	}
	over := s.used - s.cfg.DiskBytes
	if over <= 0 {
		return nil
	}
	if over = s.dropPartialsLocked(over, "room for a fill"); over <= 0 {
		return nil
	}
	items := make([]smm.Item, 0, len(s.titles))
	for _, t := range s.titles {
		items = append(items, smm.Item{
			Title: t.meta.ID, Bytes: t.meta.Size, InUse: t.refs > 0 || t.filling, LastAccess: t.lastAccess,
			Pinned: s.protected[t.meta.ID],
		})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Title < items[j].Title })
	victims, ok := s.cfg.Evictor.Victims(items, over, s.cfg.Now())
	if !ok {
		return fmt.Errorf("%w: %d bytes over the quota of %d, the rest is in use", ErrNoSpace, over, s.cfg.DiskBytes)
	}
	for _, id := range victims {
		s.log.Info("evicting title to make room", "title", id, "policy", s.cfg.Evictor.Name())
		s.removeLocked(s.titles[id])
	}
	return nil
}

// fsRoomLocked removes partials, oldest first, while the file system's
// free bytes are fewer than those the fills in progress have still to
// write (s.mu held). The node reports partials to the manager as free
// disk, file system included (vodnode's load report), so they must go
// when a fill needs their room there, and not only when the quota is
// reached: disk_bytes may exceed the disk, or other files fill it. Whole
// titles are the manager's to evict; it counts the file system's room.
func (s *Store) fsRoomLocked() {
	if len(s.partials) == 0 || s.fsAvail == nil {
		return
	}
	free, ok := s.fsAvail()
	if !ok {
		return
	}
	var need int64
	for _, t := range s.titles {
		if t.filling {
			need += max(t.meta.Size-t.View().Index.Size, 0)
		}
	}
	if short := need - free; short > 0 {
		s.dropPartialsLocked(short, "room on the file system for a fill")
	}
}

// Evict removes title id from the disk, or its partial when only that is
// kept. Errors wrap ErrUnknownTitle (neither stored nor partial) or
// ErrInUse (held by a reader or filling).
func (s *Store) Evict(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.titles[id]
	if !ok {
		if p := s.partials[id]; p != nil {
			s.dropPartialLocked(p, "evicted")
			return nil
		}
		return fmt.Errorf("%w: %q not stored", ErrUnknownTitle, id)
	}
	if t.refs > 0 || t.filling {
		return fmt.Errorf("%w: %q", ErrInUse, id)
	}
	s.removeLocked(t)
	return nil
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
