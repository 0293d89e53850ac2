package store

import (
	"errors"
	"fmt"
	"syscall"
)

// ReadFailed checks t, a copy a read of which failed while it was sent
// (err, the read's error): a complete copy whose file is now shorter than
// its index says (cut behind the node's back, a restore gone wrong) or
// that the disk cannot read (EIO) is dropped as an eviction drops one,
// its viewers keeping what their open file still holds. The title's next
// viewer then fills it afresh from the origin, and the node's next load
// report no longer lists the copy, so the manager stops sending viewers
// to it. It returns why it dropped t, and "" when it kept it: a copy
// still filling (its reads wait for the fill), one already dropped or
// replaced, a read error that neither the file's size nor the disk
// explains.
func (s *Store) ReadFailed(t *Title, err error) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.removed || t.filling || s.titles[t.meta.ID] != t || t.file == nil {
		return ""
	}
	var why string
	switch st, serr := t.file.Stat(); {
	case serr != nil:
		why = fmt.Sprintf("its file cannot be read: %v", serr)
	case st.Size() < t.View().Index.Size:
		why = fmt.Sprintf("its file is %d bytes, %d when its fill completed", st.Size(), t.View().Index.Size)
	case errors.Is(err, syscall.EIO):
		why = fmt.Sprintf("the disk fails to read it: %v", err)
	default:
		return ""
	}
	s.log.Warn("damaged copy dropped: the title's next viewer fills it again from the origin", "title", t.meta.ID, "why", why)
	s.removeLocked(t)
	return why
}
