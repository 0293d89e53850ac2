package store

import (
	"fmt"

	"vodcluster/cdp/tsindex"
)

// ReadFailed checks t, a copy a read of which failed while it was sent
// (err, the read's error): a complete copy whose file is now shorter than
// its index says (cut behind the node's back, a restore gone wrong) is
// dropped as an eviction drops one, its viewers keeping what their open
// file still holds. The title's next viewer then fills it afresh from the
// origin, and the node's next load report no longer lists the copy, so
// the manager stops sending viewers to it. It returns why it dropped t,
// and "" when it kept it: a copy still filling (its reads wait for the
// fill), one already dropped or replaced, the store closed, a file whose
// size cannot be read (closed under the send) or is whole (an I/O error
// of the disk, which may pass: counted and logged by the caller).
// The file's size is read without the store's lock (a stuck disk holds
// that one call only).
func (s *Store) ReadFailed(t *Title, err error) string {
	s.mu.Lock()
	if s.closed || t.removed || t.filling || s.titles[t.meta.ID] != t || t.file == nil {
		s.mu.Unlock()
		return ""
	}
	f, want := t.file, t.View().Index.Size
	s.mu.Unlock()
	st, serr := f.Stat()
	if serr != nil || st.Size() >= want {
		return ""
	}
	why := fmt.Sprintf("its file is %d bytes, %d when its fill completed", st.Size(), want)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || t.removed || t.filling || s.titles[t.meta.ID] != t {
		return ""
	}
	s.log.Warn("damaged copy dropped: the title's next viewer fills it again from the origin", "title", t.meta.ID, "why", why, "read_err", err)
	s.removeLocked(t)
	return why
}

// warnClockJumps logs a title whose clock the index found discontinuous
// (tsindex.Index.PCRJumps): its PCRs went back or leapt ahead without
// the stream's bytes between, as at a splice or where bytes are damaged.
// It is played through at its mean rate; a player sees the jumps of its
// timestamps.
func (s *Store) warnClockJumps(id string, idx *tsindex.Index) {
	if idx.PCRJumps > 0 {
		s.log.Warn("title's PCR clock jumps (a splice, or damaged bytes): paced through at its mean rate; players see the jumps",
			"title", id, "pcr_jumps", idx.PCRJumps)
	}
}
