package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/cdp/tsindex"
	"vodcluster/proto/durtext"
)

// A partial is the beginning of a title kept on the node's disk after its
// fill stopped short: the origin away for longer than RetryFor, the fill
// abandoned by its viewers, or the node stopping. It is <id>.ts.part with
// <id>.ts.part.meta, the title's size and the origin's version of its
// bytes (pb.Title.version) when the fill started. The next fill of the
// title on this node, on demand or prefetch, resumes from it when the
// origin's catalog still gives that size and version, and asks the origin
// for the bytes from the partial's end only, naming the version
// (FetchRequest.if_version); a partial of another version is removed. A
// partial is never a copy of the title: it is not listed by Titles nor
// served until its fill completes. Its bytes count in the node's quota;
// when a fill needs room the partials go first (oldest first), before the
// Evictor chooses among whole titles (but for the partials of titles a
// viewer is on its way for: Expect), and one not resumed within
// PartialMaxAge is removed.

// DefaultPartialMaxAge is Config.PartialMaxAge's default: how long a
// partial waits for its title's next fill before it is removed.
const DefaultPartialMaxAge = 24 * time.Hour

// partialSweep is how often partials older than PartialMaxAge are looked
// for (they are also at Open and before every fill).
const partialSweep = time.Minute

// partialMetaExt ends the name of a partial's record, beside <id>.ts.part.
const partialMetaExt = ".ts.part.meta"

// partialRecord is what <id>.ts.part.meta holds (JSON): the title whose
// beginning <id>.ts.part is, as the origin's catalog gave it when the fill
// started.
type partialRecord struct {
	ID        string  `json:"title_id"`
	SizeBytes int64   `json:"size_bytes"`
	Version   string  `json:"version"`
	Bitrate   int64   `json:"bitrate_bps"`
	DurationS float64 `json:"duration_s"`
}

// partial is a kept partial (guarded by Store.mu).
type partial struct {
	meta  Meta      // the title it begins, as its fill started
	bytes int64     // size of the .part file, bytes
	since time.Time // when its fill stopped (the file's modification time after a restart)
}

// resumable reports whether p is the beginning of the title m describes:
// the same size and a known, equal version.
func (p *partial) resumable(m Meta) bool {
	return m.Version != "" && p.meta.Version == m.Version && p.meta.Size == m.Size && p.bytes <= m.Size
}

// Partial is a partly filled title kept on the node's disk to resume its
// fill from (never served as the title).
type Partial struct {
	ID      string
	Size    int64     // bytes of the whole title
	Stored  int64     // bytes on disk
	Version string    // the origin's version of the title's bytes
	Since   time.Time // when its fill stopped
}

// Partials returns the partly filled titles kept to resume their fills,
// sorted by id. Their bytes are in Usage's used bytes, not in Titles.
func (s *Store) Partials() []Partial {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Partial, 0, len(s.partials))
	for _, p := range s.partials {
		out = append(out, Partial{ID: p.meta.ID, Size: p.meta.Size, Stored: p.bytes, Version: p.meta.Version, Since: p.since})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// writePartialRecord writes the record of m's partial (a temporary file
// renamed), before the fill writes its first byte.
func (s *Store) writePartialRecord(m Meta) error {
	b, err := json.Marshal(partialRecord{ID: m.ID, SizeBytes: m.Size, Version: m.Version, Bitrate: m.Bitrate, DurationS: m.Duration})
	if err != nil {
		return err
	}
	path := s.path(m.ID, partialMetaExt)
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		os.Remove(path + ".tmp")
		return err
	}
	return os.Rename(path+".tmp", path)
}

// readPartialRecord returns the title the partial of id begins; false when
// its record is missing, unreadable or not of id.
func (s *Store) readPartialRecord(id string) (Meta, bool) {
	b, err := os.ReadFile(s.path(id, partialMetaExt))
	if err != nil {
		return Meta{}, false
	}
	var r partialRecord
	if json.Unmarshal(b, &r) != nil || r.ID != id {
		return Meta{}, false
	}
	return Meta{ID: r.ID, Size: r.SizeBytes, Version: r.Version, Bitrate: r.Bitrate, Duration: r.DurationS}, true
}

// removePartialFiles removes the record first, so that a .part is never
// left with the record of another fill.
func (s *Store) removePartialFiles(id string) {
	os.Remove(s.path(id, partialMetaExt))
	os.Remove(s.path(id, ".ts.part"))
}

// loadPartial takes up, at Open, the .part file of title id left by a fill
// that stopped: kept when its record names a version and a size it does
// not exceed and the title is not stored whole, else removed.
func (s *Store) loadPartial(id string) {
	m, ok := s.readPartialRecord(id)
	st, err := os.Stat(s.path(id, ".ts.part"))
	why := ""
	switch {
	case !ValidID(id):
		why = "invalid title id"
	case !ok || m.Version == "" || m.Size <= 0:
		why = "no record of the title's size and version"
	case err != nil:
		why = err.Error()
	case st.Size() == 0:
		why = "empty"
	case st.Size() > m.Size:
		why = fmt.Sprintf("%d bytes, more than the title's %d", st.Size(), m.Size)
	case s.titles[id] != nil:
		why = "the title is stored whole"
	}
	if why != "" {
		s.log.Info("partial fill removed", "title", id, "why", why)
		s.removePartialFiles(id)
		return
	}
	s.partials[id] = &partial{meta: m, bytes: st.Size(), since: st.ModTime()}
	s.used += st.Size()
	s.log.Info("partial fill kept to resume", "title", id, "bytes", st.Size(), "size_bytes", m.Size)
}

// dropPartialLocked removes partial p (s.mu held).
func (s *Store) dropPartialLocked(p *partial, why string) {
	if s.partials[p.meta.ID] != p {
		return
	}
	delete(s.partials, p.meta.ID)
	s.used -= p.bytes
	s.removePartialFiles(p.meta.ID)
	s.log.Info("partial fill removed", "title", p.meta.ID, "bytes", p.bytes, "why", why)
}

// partialBytesLocked returns the bytes of the partials other than the one
// of title except (s.mu held).
func (s *Store) partialBytesLocked(except string) int64 {
	var n int64
	for id, p := range s.partials {
		if id != except {
			n += p.bytes
		}
	}
	return n
}

// freeablePartialBytesLocked returns the bytes of the partials the
// room made for a fill may remove (dropPartialsLocked): those other than
// the one of title except and of the titles a viewer is on its way for
// (Expect) or the manager protects (a pin: SetProtected; s.mu held, and
// Expect's deadlines pruned).
func (s *Store) freeablePartialBytesLocked(except string) int64 {
	var n int64
	for id, p := range s.partials {
		if id != except && !s.keptLocked(id) {
			n += p.bytes
		}
	}
	return n
}

// dropPartialsLocked removes partials, oldest first, until over bytes are
// freed or none is left, and returns the bytes still to free (s.mu held).
// The partial of a title a viewer is on its way for (Expect) or pinned
// (SetProtected) is kept: the fill that viewer starts, or the pin's
// prefetch, resumes it, where without it the fill would fetch the title
// again from its first byte.
func (s *Store) dropPartialsLocked(over int64, why string) int64 {
	s.expect.prune(s.cfg.Now())
	ps := make([]*partial, 0, len(s.partials))
	for _, p := range s.partials {
		if !s.keptLocked(p.meta.ID) {
			ps = append(ps, p)
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].since.Before(ps[j].since) })
	for _, p := range ps {
		if over <= 0 {
			break
		}
		over -= p.bytes
		s.dropPartialLocked(p, why)
	}
	return over
}

// expirePartials removes the partials whose fill stopped PartialMaxAge
// ago or more.
func (s *Store) expirePartials() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expirePartialsLocked()
}

func (s *Store) expirePartialsLocked() {
	now := s.cfg.Now()
	for _, p := range s.partials {
		if now.Sub(p.since) >= s.cfg.PartialMaxAge {
			s.dropPartialLocked(p, fmt.Sprintf("not resumed within %s", durtext.Written(s.cfg.PartialMaxAge)))
		}
	}
}

// sweepPartials expires partials every partialSweep until the store
// closes.
func (s *Store) sweepPartials() {
	defer s.bg.Done()
	tick := time.NewTicker(partialSweep)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
			s.expirePartials()
		}
	}
}

// resumeFrom indexes the bytes a stopped fill left in t's .part file,
// checking them packet by packet (a node that crashed may have left a tail
// never written: zeros, no sync byte), cuts the file before the packet
// that precedes the first bad one (see below) and returns the fillWriter
// (index and hash of the kept bytes) that goes on with the origin's bytes
// and the offset to fetch from. Readers
// get the kept bytes as they are indexed. Errors: t's fill cancelled (the
// file is left as it was), or ErrDisk (wrapped) when the file cannot be
// read or cut.
//
// A machine that lost power keeps a file's size but may lose its pages
// (or blocks) from any one on: they read back as zeros. Packets of 188
// bytes do not line up with pages, so the packet before the first one
// without its sync byte may have begun in a page that was written and
// ended in one that was not: its sync byte is there, its tail is zeros.
// That packet is fetched again too.
func (s *Store) resumeFrom(t *Title) (*fillWriter, int64, error) {
	st, err := t.file.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrDisk, err)
	}
	end := min(st.Size(), t.meta.Size) / tsindex.PacketSize * tsindex.PacketSize
	b, n, err := s.index(t, end, true)
	if errors.Is(err, tsindex.ErrNotTS) {
		// [0, n) passed the check, all but its last packet is kept: index
		// (and hash) that again with a fillWriter that saw nothing else,
		// publishing only the end (views never shrink: those of the first
		// pass stopped one read before the read holding the bad packet).
		s.log.Warn("partial fill cut before its first bad packet", "title", t.meta.ID, "offset", n, "bytes", st.Size(), "err", err)
		n = max(n-tsindex.PacketSize, 0)
		if b, n, err = s.index(t, n, false); err == nil {
			t.publish(&View{Index: *b.Index()})
		}
	}
	if err != nil {
		return nil, 0, err
	}
	if n != st.Size() {
		if err := t.file.Truncate(n); err != nil {
			s.noteDiskFault()
			return nil, 0, fmt.Errorf("%w: %v", ErrDisk, err)
		}
	}
	return b, n, nil
}

// index feeds [0, end) of t's file, end a multiple of the packet size, to
// a new fillWriter (indexed, and hashed when t's version is known) and
// returns it with the bytes indexed. When publish is
// set it publishes the view of the bytes read up to the read before the
// last (so that a bad packet found in a read leaves the views at least a
// read short of it), and the whole view once every read passed. Errors:
// tsindex.ErrNotTS (wrapped) at the first bad packet, whose offset the
// count then is; t's fill cancelled; ErrDisk.
func (s *Store) index(t *Title, end int64, publish bool) (*fillWriter, int64, error) {
	b := newFillWriter(t.meta)
	buf := make([]byte, 1024*tsindex.PacketSize)
	var prev *View // the view as of the read before the last
	for off := int64(0); off < end; {
		if err := t.ctx.Err(); err != nil {
			return nil, 0, status.FromContextError(err).Err()
		}
		n := int(min(int64(len(buf)), end-off))
		if _, err := t.file.ReadAt(buf[:n], off); err != nil {
			s.noteDiskFault()
			return nil, 0, fmt.Errorf("%w: reading the partial fill: %v", ErrDisk, err)
		}
		if _, err := b.Write(buf[:n]); err != nil {
			return nil, b.Index().Size, err
		}
		off += int64(n)
		if publish {
			if prev != nil {
				t.publish(prev)
			}
			prev = &View{Index: *b.Index()}
		}
	}
	if prev != nil {
		t.publish(prev)
	}
	return b, end, nil
}

// keepPartial reports whether the bytes of t's fill, which ended with err,
// are worth keeping for the next fill: the origin gave the title's version,
// and err is not about the bytes themselves (not MPEG-TS, another size or
// version at the origin, not the version announced), the node's disk, a
// title the origin no longer has, or a prefetch the operator evicted.
func keepPartial(t *Title, err error) bool {
	if t.meta.Version == "" || errors.Is(err, tsindex.ErrNotTS) || errors.Is(err, ErrDisk) ||
		errors.Is(err, ErrNoSpace) || errors.Is(err, errReplaced) || errors.Is(err, errMismatch) || errors.Is(err, errCancelled) {
		return false
	}
	switch status.Code(err) {
	case codes.NotFound, codes.OutOfRange, codes.FailedPrecondition, codes.InvalidArgument:
		return false
	}
	return true
}
