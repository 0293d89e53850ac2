package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"os"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/cdp/tsindex"
	"vodcluster/proto/durtext"
	"vodcluster/proto/grpctls"
	pb "vodcluster/proto/vodcluster/v1"
)

// startFillLocked reserves room for meta (checking that eviction can make
// it; the fill evicts once the origin answers) and starts the fill's
// goroutine: from the title's partial when one of meta's size and version
// is kept (a partial of another is removed), else from an empty
// <id>.ts.part, with the partial's record (partial.go) when the origin
// gave a version. Called with s.mu held.
func (s *Store) startFillLocked(meta Meta, prefetch bool) (*Title, error) {
	if s.cfg.Origin == nil {
		return nil, fmt.Errorf("%w: %q (no origin configured)", ErrUnknownTitle, meta.ID)
	}
	s.expirePartialsLocked()
	part := s.path(meta.ID, ".ts.part")
	var f *os.File
	p := s.partials[meta.ID]
	if p != nil && !p.resumable(meta) {
		s.dropPartialLocked(p, fmt.Sprintf("of another version of the title (%d bytes, version %q; the origin's: %d bytes, version %q)",
			p.meta.Size, p.meta.Version, meta.Size, meta.Version))
		p = nil
	}
	if p != nil {
		var err error
		if f, err = os.OpenFile(part, os.O_RDWR, 0); err != nil {
			s.dropPartialLocked(p, err.Error())
			p = nil
		}
	}
	need := meta.Size
	if p != nil {
		need -= p.bytes
	}
	if err := s.roomLocked(need, meta.ID, prefetch); err != nil {
		if f != nil {
			f.Close()
		}
		return nil, err
	}
	if p != nil {
		delete(s.partials, meta.ID) // the fill's now; s.used already counts its bytes
	} else {
		var err error
		f, err = os.OpenFile(part, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err == nil && meta.Version != "" {
			err = s.writePartialRecord(meta)
		} else if err == nil {
			err = os.Remove(s.path(meta.ID, partialMetaExt))
			if errors.Is(err, os.ErrNotExist) {
				err = nil
			}
		}
		if err != nil {
			if f != nil {
				f.Close()
			}
			s.removePartialFiles(meta.ID)
			s.noteDiskFault()
			s.log.Warn("title cache: a fill's file could not be created: no fills until a test write succeeds", "title", meta.ID, "err", err)
			return nil, fmt.Errorf("%w: %w", ErrDisk, err)
		}
	}
	t := &Title{meta: meta, file: f, filling: true, prefetch: prefetch, lastAccess: s.cfg.Now(), resume: p != nil, done: make(chan struct{})}
	t.ctx, t.cancel = context.WithCancel(s.ctx)
	t.view.Store(&View{Index: tsindex.Index{FirstPTS: -1}})
	s.titles[meta.ID] = t
	s.used += need
	s.fillsByID[meta.ID]++
	s.fills.Add(1)
	go s.fill(t)
	if p != nil {
		s.log.Info("fill started from a partial", "title", meta.ID, "size_bytes", meta.Size, "partial_bytes", p.bytes, "prefetch", prefetch)
	} else {
		s.log.Info("fill started", "title", meta.ID, "size_bytes", meta.Size, "prefetch", prefetch)
	}
	return t, nil
}

// fill copies the title from the origin into its .part file, publishing a
// new View after every chunk, then renames the file to <id>.ts. A fill
// resuming a partial first indexes the bytes on disk (resumeFrom) and asks
// the origin for the rest only. A transfer the origin interrupts is
// retried from the offset reached (readers go on with the bytes on disk
// meanwhile) with the backoff of Config.Retry, RetryMax and RetryFor; the
// fill fails when the origin sent nothing for RetryFor (not counting the
// time its retries spent queued at the origin for a channel), or at once
// on an error no retry can mend. Every transfer names the title's version
// (if_version), so that bytes of a title replaced at the origin are never
// appended to those of the old one, and the bytes are hashed as they are
// written (fillWriter): a copy whose hash is not the version fails
// (errMismatch) and is not kept, not even as a partial.
func (s *Store) fill(t *Title) {
	defer s.fills.Done()
	defer close(t.done) // after finishFill or failFill below
	id := t.meta.ID
	if ended := s.cfg.FillEnded; ended != nil {
		defer ended(id) // after finishFill or failFill below
	}
	b := newFillWriter(t.meta)
	var off, fetched int64
	var err error
	start := time.Now()
	indexed := true // the file's bytes are those of b (cut to them when kept)
	if t.resume {
		indexed = false
		if b, off, err = s.resumeFrom(t); err == nil {
			indexed = true
			s.log.Info("fill resumed", "title", id, "offset", off, "size_bytes", t.meta.Size)
		}
	}
	if err == nil {
		fetched, err = s.transfer(t, b, off)
		off += fetched
	}
	if err != nil && s.ctx.Err() == nil && t.ctx.Err() != nil {
		err = s.stopCause(t)
	}
	t.cancel() // the fill's context is done either way
	if err == nil && t.meta.Size > 0 && off != t.meta.Size {
		err = fmt.Errorf("origin sent %d bytes of %d (%w? the next fill reads the catalog again)", off, t.meta.Size, errReplaced)
	}
	if status.Code(err) == codes.FailedPrecondition { // another version: if_version
		err = fmt.Errorf("%w (the next fill reads the catalog again): %w", errReplaced, err)
	}
	if err == nil {
		err = b.verify(t.meta, off)
	}
	if errors.Is(err, errReplaced) || errors.Is(err, errMismatch) {
		s.cat.forget()
	}
	if err == nil {
		err = s.finishFill(t, b)
	}
	if err != nil {
		s.failFill(t, err, indexed)
		return
	}
	s.log.Info("fill complete", "title", id, "bytes", off, "origin_bytes", fetched, "seconds", time.Since(start).Seconds())
	s.dropEvictedCopy(t)
}

// transfer fetches t's bytes from offset off to the end, retrying the
// transfers the origin interrupts, and returns the bytes written.
func (s *Store) transfer(t *Title, b *fillWriter, off int64) (int64, error) {
	var fetched int64
	room := false
	r := retrier{base: s.cfg.Retry, max: s.cfg.RetryMax, window: s.cfg.RetryFor}
	for attempt := 1; ; attempt++ {
		n, queued, prefetch, err := s.fetch(t, b, off+fetched, &room)
		fetched += n
		if errors.Is(err, errWatched) && t.ctx.Err() == nil {
			// A viewer came for the prefetch: asked again at once, as a
			// fill on demand (a viewer's read far ahead does not take
			// its channel), with a retry window of its own (the wait
			// cut short may have been the origin's queue).
			r.progress()
			continue
		}
		if err == nil || !retryable(err) || t.ctx.Err() != nil {
			return fetched, err
		}
		if n > 0 {
			r.progress()
		}
		if prefetch && status.Code(err) == codes.Aborted {
			// The origin gave the prefetch's channel to a viewer's fill
			// or read (pb.FetchRequest.prefetch): not an outage (the
			// retry window is not spent); it queues again after the
			// first pause of a retry.
			r.queued(queued)
			s.log.Info("prefetch gave its origin channel to a viewer's fill or read; it queues for one again", "title", t.meta.ID, "offset", off+fetched)
			pause(t.ctx, s.cfg.Retry)
			continue
		}
		r.queued(queued)
		wait, ok := r.next(time.Now())
		if !ok {
			return fetched, fmt.Errorf("no byte from the origin for %s, not counting the wait for its channels (%d attempts): %w", durtext.Written(s.cfg.RetryFor), attempt, err)
		}
		s.mu.Lock()
		t.retry = originRetry{failures: t.retry.failures + 1, next: time.Now().Add(wait), err: err.Error()}
		s.mu.Unlock()
		// One warning per outage (the first attempt since bytes last came),
		// the retries after it at debug: an origin away for fill_retry_for
		// would otherwise log some twenty lines per fill.
		level := slog.LevelDebug
		if attempt == 1 || n > 0 {
			level = slog.LevelWarn
		}
		s.log.Log(t.ctx, level, "fill interrupted, retrying", "title", t.meta.ID, "offset", off+fetched, "attempt", attempt,
			"retry_in_s", wait.Seconds(), "retry_for_s", s.cfg.RetryFor.Seconds(), "err", err)
		pause(t.ctx, wait)
	}
}

// pause waits d or until ctx is done.
func pause(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// errReplaced is a fill that got another number of bytes than the
// catalog's size, or that the origin refused as of another version: the
// title was replaced at the origin.
var errReplaced = errors.New("the title was replaced at the origin")

// errMismatch is a fill whose bytes, all received, do not hash to the
// version the origin announced for them: an origin sending other bytes
// than it describes, or a partial resumed whose bytes changed on the
// node's disk. The copy is not kept, and the next fill asks the origin
// again.
var errMismatch = errors.New("bytes do not match the origin's version")

// A fillWriter takes a fill's bytes in file order (those of a partial
// resumed, then the origin's): it indexes them and, when the origin gave
// the title's version, hashes them to check that version before the copy
// is kept (verify). The version is the CDP's: the first 128 bits of the
// SHA-256 of the whole file, hex (pb.Title.version; cdp scanFile).
type fillWriter struct {
	*tsindex.Builder
	h hash.Hash // nil: no version to check
}

// newFillWriter returns the fillWriter of a fill of m, hashing only when
// m.Version is set.
func newFillWriter(m Meta) *fillWriter {
	w := &fillWriter{Builder: tsindex.NewBuilder()}
	if m.Version != "" {
		w.h = sha256.New()
	}
	return w
}

// Write hashes p and indexes it. Errors: those of tsindex.Builder.Write
// (tsindex.ErrNotTS).
func (w *fillWriter) Write(p []byte) (int, error) {
	if w.h != nil {
		w.h.Write(p) // never fails
	}
	return w.Builder.Write(p)
}

// verify checks the n bytes written, the whole title, against m.Version:
// nil when they match or when there is no version; else errMismatch
// (wrapped), saying the version announced and the bytes' own.
func (w *fillWriter) verify(m Meta, n int64) error {
	if w.h == nil {
		return nil
	}
	if got := hex.EncodeToString(w.h.Sum(nil)[:16]); got != m.Version {
		return fmt.Errorf("%w %s: the %d bytes received hash to %s (first 128 bits of their SHA-256); "+
			"the copy is not kept and the next fill asks the origin again", errMismatch, m.Version, n, got)
	}
	return nil
}

// errWatched ends a prefetch's transfer when a viewer comes for its
// title, or the manager protects it (Title.yield): the fill asks the
// origin again as a fill on demand.
var errWatched = errors.New("a viewer came for the prefetch, or the manager protects it")

// watchedLocked notes that a viewer came for t, or the manager protects
// it (s.mu held): a transfer of its fill asked of the origin as a
// prefetch ends (errWatched).
func (s *Store) watchedLocked(t *Title) {
	if t != nil && t.yield != nil {
		t.yield(errWatched)
		t.yield = nil
	}
}

// fetch runs one Fetch from offset off and returns the bytes written and
// how long the transfer waited at the origin before it started: from the
// call to the origin's started message (its queue for a channel and its
// setup delay), 0 without one (an origin that predates it, or a transfer
// that failed before it started: then the wait is not known to be the
// queue's). Before it writes the first bytes of the fill it makes room on
// the disk, unless *room says that was done.
//
// Once the origin has said the transfer started (its first message, with
// no data: pb.FetchChunk.started, sent when the transfer got one of the
// origin's channels) or, from an origin that predates it, sent the first
// chunk, a wait of Config.StallAfter for the next message ends the
// transfer with errStalled (retried as an interrupted one). The wait
// before that, the transfer queued at the origin for a channel, is not
// bounded so.
//
// A prefetch no viewer watches (nor is on its way to, nor the manager
// protects: keptLocked) asks the origin so (pb.FetchRequest.prefetch,
// reported in prefetch): its channel goes to a viewer's fill, or to a
// viewer's read far ahead of a fill, that needs one. Once a viewer comes
// for it, or the manager protects it, the transfer ends with errWatched
// (watchedLocked). Any other transfer holds its channel (Title.askedFill).
func (s *Store) fetch(t *Title, b *fillWriter, off int64, room *bool) (n int64, queued time.Duration, prefetch bool, err error) {
	ctx, cancel := context.WithCancelCause(t.ctx)
	defer cancel(nil)
	s.mu.Lock()
	s.expect.prune(s.cfg.Now())
	prefetch = t.prefetch && t.refs == 0 && !s.keptLocked(t.meta.ID)
	if prefetch {
		t.yield = cancel
	} else {
		t.askedFill = true
	}
	t.originWait = true        // until the origin's first message (fetchOnce)
	t.retry.next = time.Time{} // a retry under way
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		t.yield, t.askedFill, t.originWait = nil, false, false
		s.mu.Unlock()
	}()
	n, queued, err = s.fetchOnce(ctx, cancel, t, b, off, prefetch, room)
	if err != nil && errors.Is(context.Cause(ctx), errWatched) {
		err = errWatched
	}
	return n, queued, prefetch, err
}

// fetchOnce is fetch's Fetch, on ctx (cancel is its).
func (s *Store) fetchOnce(ctx context.Context, cancel context.CancelCauseFunc, t *Title, b *fillWriter, off int64, prefetch bool, room *bool) (n int64, queued time.Duration, err error) {
	asked := time.Now()
	stream, err := s.cfg.Origin.Fetch(ctx, &pb.FetchRequest{TitleId: t.meta.ID, Offset: off, IfVersion: t.meta.Version, Prefetch: prefetch})
	if err != nil {
		return 0, 0, err
	}
	// stall is armed only while the origin's next message is awaited once
	// the transfer started: the node's own work between chunks (making
	// room, writing) is not the origin's silence.
	var stall *time.Timer
	for {
		if stall != nil {
			stall.Reset(s.cfg.StallAfter)
		}
		c, err := stream.Recv()
		if stall != nil {
			stall.Stop()
		}
		if errors.Is(err, io.EOF) {
			return n, queued, nil
		}
		if err != nil {
			if errors.Is(context.Cause(ctx), errStalled) && t.ctx.Err() == nil {
				if n == 0 {
					return n, queued, fmt.Errorf("%w: no byte for %s since the origin started the transfer at offset %d", errStalled, durtext.Written(s.cfg.StallAfter), off)
				}
				return n, queued, fmt.Errorf("%w: no chunk for %s after offset %d", errStalled, durtext.Written(s.cfg.StallAfter), off+n)
			}
			return n, queued, err
		}
		if c.GetStarted() { // the transfer's first message, once
			queued = time.Since(asked)
		}
		if stall == nil { // the origin's first message: the transfer started there
			s.mu.Lock()
			t.originWait = false
			t.retry = originRetry{} // the origin answers again
			s.mu.Unlock()
			stall = time.AfterFunc(s.cfg.StallAfter, func() { cancel(errStalled) })
			stall.Stop()
		}
		if c.GetOffset() != off+n {
			return n, queued, fmt.Errorf("origin chunk at offset %d, expected %d", c.GetOffset(), off+n)
		}
		if len(c.GetData()) == 0 {
			continue // the transfer's start (started), or nothing to write
		}
		if !*room {
			s.mu.Lock()
			abandoned := t.ctx.Err() != nil
			t.started = !abandoned // a viewer leaving now no longer cancels it
			s.mu.Unlock()
			if abandoned {
				return n, queued, errAbandoned
			}
			if err := s.makeRoom(t); err != nil {
				return n, queued, err
			}
			*room = true
			t.aheadMu.Lock()
			t.aheadOK = true // Title.WriteAhead
			t.aheadMu.Unlock()
		}
		data := c.GetData()
		if _, err := t.file.WriteAt(data, off+n); err != nil {
			s.noteDiskFault()
			return n, queued, fmt.Errorf("%w: %v", ErrDisk, err)
		}
		n += int64(len(data))
		s.originBytes.Add(int64(len(data)))
		if _, err := b.Write(data); err != nil {
			return n, queued, err
		}
		t.publish(&View{Index: *b.Index()})
	}
}

// errStalled ends a transfer the origin started and then sent nothing of
// for Config.StallAfter; the fill retries it from the offset reached.
var errStalled = errors.New("origin transfer stalled")

// errAbandoned ends a fill on demand whose viewers all left before the
// origin's first byte (Store.Release): its origin channel goes to others.
var errAbandoned = errors.New("abandoned: its viewers left before the origin's first byte")

// errPreempted ends a prefetch no viewer watched, stopped to make room
// for a fill on demand (makeRoom); its bytes are kept as a partial, which
// the room may take in turn.
var errPreempted = errors.New("preempted: stopped to make room for a fill on demand")

func retryable(err error) bool {
	if errors.Is(err, tsindex.ErrNotTS) || errors.Is(err, ErrNoSpace) || errors.Is(err, errAbandoned) || errors.Is(err, ErrDisk) {
		return false
	}
	switch status.Code(err) {
	case codes.NotFound, codes.OutOfRange, codes.InvalidArgument, codes.PermissionDenied, codes.Unauthenticated, codes.Canceled, codes.FailedPrecondition:
		return false
	}
	return true
}

// finishFill makes the .part file the title's file and persists the index
// (its bytes checked against the title's version before: fill).
func (s *Store) finishFill(t *Title, b *fillWriter) error {
	id := t.meta.ID
	if err := t.file.Sync(); err != nil {
		return err
	}
	// The index first, then the rename: a complete copy (<id>.ts) always
	// has the index that says its size, so a copy found shorter at the
	// next start is known to be damaged (load).
	idx := b.Index()
	st, err := t.file.Stat()
	if err != nil {
		return err
	}
	if err := saveIndex(s.path(id, ".idx"), st, idx, t.meta.Version); err != nil {
		return fmt.Errorf("%w: index: %v", ErrDisk, err)
	}
	if err := os.Rename(s.path(id, ".ts.part"), s.path(id, ".ts")); err != nil {
		os.Remove(s.path(id, ".idx"))
		return err
	}
	os.Remove(s.path(id, partialMetaExt))
	s.mu.Lock()
	t.filling = false
	s.doneByID[id]++
	s.mu.Unlock()
	t.publish(&View{Index: *idx, Complete: true})
	s.warnClockJumps(id, idx)
	return nil
}

// failFill forgets the title, keeps its bytes as a partial (cut to the
// whole packets indexed, when indexed says the index is the file's) or
// removes its .part file (keepPartial), and tells the readers.
func (s *Store) failFill(t *Title, err error, indexed bool) {
	t.aheadMu.Lock()
	t.aheadOK = false // no Title.WriteAhead past keepBytes's cut
	t.aheadMu.Unlock()
	id := t.meta.ID
	var kept int64
	if keepPartial(t, err) {
		kept = s.keepBytes(t, indexed)
	}
	switch {
	case s.ctx.Err() != nil:
		s.log.Info("fill stopped: store closing", "title", id)
	case errors.Is(err, errAbandoned):
		s.log.Info("fill abandoned: its viewers left before the origin's first byte", "title", id)
	case errors.Is(err, errPreempted):
		s.log.Info("prefetch stopped to make room for a fill on demand", "title", id, "stored_bytes", t.View().Index.Size)
	case errors.Is(err, errCancelled):
		s.log.Info("prefetch cancelled by the operator's eviction: ended, its bytes dropped", "title", id, "stored_bytes", t.View().Index.Size)
	default:
		if h := grpctls.OriginHint(err); h != "" {
			s.log.Error("fill failed", "title", id, "err", err, "hint", h)
		} else {
			s.log.Error("fill failed", "title", id, "err", err)
		}
	}
	s.mu.Lock()
	if s.ctx.Err() == nil {
		s.failedBy[FailCause(err)]++
	}
	if s.ctx.Err() == nil && len(s.failures) < maxFailures && !errors.Is(err, errCancelled) { // not a failure to retry
		s.failures = append(s.failures, Failure{Title: id, Reason: err.Error(), Prefetch: t.prefetch, At: s.cfg.Now()})
	}
	t.filling = false
	if s.titles[id] == t {
		delete(s.titles, id)
		s.used -= t.meta.Size
	}
	t.removed = true
	if t.refs == 0 {
		t.file.Close()
	}
	// Under s.mu: a fill of the title started once it is out of s.titles
	// finds the partial, or no file.
	if kept > 0 {
		s.partials[id] = &partial{meta: t.meta, bytes: kept, since: s.cfg.Now()}
		s.used += kept
	} else {
		s.removePartialFiles(id)
	}
	s.mu.Unlock()
	if kept > 0 {
		s.log.Info("partial fill kept to resume", "title", id, "bytes", kept, "size_bytes", t.meta.Size)
	}
	v := *t.View()
	v.Err = &fillError{id: id, err: err}
	t.publish(&v)
}

// keepBytes readies the bytes of t's stopped fill to be kept: cut to the
// whole packets indexed (when indexed; else, a resume stopped while
// checking them, left as they are, checked at the next resume) and synced.
// It returns their count, 0 when there are none or they cannot be kept.
func (s *Store) keepBytes(t *Title, indexed bool) int64 {
	if indexed {
		if err := t.file.Truncate(t.View().Index.Size); err != nil {
			return 0
		}
	}
	if err := t.file.Sync(); err != nil {
		return 0
	}
	st, err := t.file.Stat()
	if err != nil {
		return 0
	}
	return st.Size()
}

// fillError is a failed fill's error (View.Err): "fill of ID failed: ...",
// errors.Is ErrFillFailed and the cause.
type fillError struct {
	id  string
	err error
}

func (e *fillError) Error() string   { return fmt.Sprintf("fill of %s failed: %v", e.id, e.err) }
func (e *fillError) Unwrap() []error { return []error{ErrFillFailed, e.err} }
