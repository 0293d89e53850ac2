package store

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"vodcluster/cdp/tsindex"
)

// Meta describes a title as the catalog (or the stored file) gives it.
type Meta struct {
	ID       string
	Size     int64   // bytes of the whole title
	Bitrate  int64   // mean bitrate, bit/s
	Duration float64 // play time, seconds
	// Version identifies the title's bytes at the origin (pb.Title.version);
	// "" when unknown (a copy whose index predates versions or was rebuilt
	// at start without its record, or an origin that gives none).
	Version string
	// HLSSegmentMax is the duration, seconds, of the longest HLS segment
	// the title is cut into (pb.Title.hls_segment_max_s, the origin's
	// measure of its whole file); 0 when unknown (an origin that gives
	// none, a copy loaded from the node's disk).
	HLSSegmentMax float64
}

// View is what a reader may use of a title at one moment. Index.Size is the
// number of bytes readable now (whole TS packets); the Index slices are
// shared and read-only (they only ever grow in later views).
type View struct {
	Index    tsindex.Index
	Complete bool  // every byte of the title is on disk
	Err      error // the fill failed; no more bytes will come
}

// Title is one title on the node, complete or filling. Its methods are safe
// for concurrent use.
type Title struct {
	meta Meta
	file *os.File
	view atomic.Pointer[View]

	wmu     sync.Mutex
	waiters []waiter

	// aheadMu serialises WriteAhead with keepBytes's cut of the file;
	// aheadOK: the fill has made room for the title and receives the
	// origin's bytes (a partial it resumes from was checked and cut
	// before), and has not stopped: WriteAhead may write.
	aheadMu sync.Mutex
	aheadOK bool

	// guarded by Store.mu
	refs       int
	filling    bool
	prefetch   bool
	removed    bool
	lastAccess time.Time
	// fill's context: cancelled when a fill on demand is abandoned before
	// the origin's first byte (Store.Release); started once it came.
	ctx     context.Context
	cancel  context.CancelFunc
	started bool
	idleGen int // bumped at each release to no reader (the abandon timer's)
	// resume: the fill goes on from a partial kept by an earlier one (its
	// .part file, opened without truncation).
	resume bool
	// preempted: a prefetch stopped to make room for a fill on demand
	// (makeRoom); done is closed when the fill's goroutine has ended
	// (failFill or finishFill done), nil for a title loaded from disk.
	preempted bool
	done      chan struct{}
	// evicted: a prefetch the operator's eviction cancelled
	// (Store.EvictOrCancel): its fill ends with errCancelled, its bytes
	// dropped; Titles no longer lists it.
	evicted bool
	// stopped: the fill was cancelled before its end (preempted,
	// evicted, or abandoned by its viewers: Store.Release); a reader
	// asking for the title meanwhile waits for done rather than join it
	// (Store.get).
	stopped bool
	// yield cancels the fill's transfer under way while it is asked of
	// the origin as a prefetch (pb.FetchRequest.prefetch), with
	// errWatched once a viewer comes for the title (holdLocked, Expect):
	// it is asked again as a fill on demand. nil otherwise.
	yield context.CancelCauseFunc
	// askedFill: the fill's transfer under way was asked of the origin
	// as a fill (not pb.FetchRequest.prefetch: a viewer watched it, or
	// the manager protects it), so the origin never ends it for a
	// viewer's fill; until it ends, the title is not preemptible even if
	// the viewer left (preemptibleLocked), and the manager counts it in
	// its budget of origin channels.
	askedFill bool
	// originWait: the fill's transfer has not started at the origin yet
	// (asked, no message from it: Status.OriginWait).
	originWait bool
	// retry: the fill's transfers that failed since the origin last
	// answered, for Status (OriginRetries, OriginRetryAt, OriginError);
	// zero once it answers.
	retry originRetry
}

// originRetry is where a fill stands in an outage of its origin: failed
// transfers since the origin last answered (the fill's first message of a
// transfer), when the next one starts (zero: under way) and the last
// failure's cause.
type originRetry struct {
	failures int
	next     time.Time
	err      string
}

type waiter struct {
	after int64
	fn    func()
}

// ID returns the title's id.
func (t *Title) ID() string { return t.meta.ID }

// Meta returns the title's metadata.
func (t *Title) Meta() Meta { return t.meta }

// View returns the current view of the title (never nil).
func (t *Title) View() *View { return t.view.Load() }

// State returns the index of the readable bytes, whether the title is
// complete, and the fill's error if it failed (the deliver.Source shape).
func (t *Title) State() (*tsindex.Index, bool, error) {
	v := t.view.Load()
	return &v.Index, v.Complete, v.Err
}

// ErrClosed is returned by ReadAt and Reopen once the title's file was
// closed (the store closed, or the title removed) or for a Title that
// has none.
var ErrClosed = errors.New("store: title closed")

// ReadAt reads len(p) bytes at offset off (bytes) of the title's file with
// pread; only bytes below View().Index.Size are guaranteed to be there.
// Errors: ErrClosed, io.EOF at the file's end (fewer bytes read), or the
// read's (an I/O error).
func (t *Title) ReadAt(p []byte, off int64) (int, error) {
	if t.file == nil {
		return 0, ErrClosed
	}
	n, err := t.file.ReadAt(p, off)
	if err != nil && errors.Is(err, os.ErrClosed) {
		err = ErrClosed
	}
	return n, err
}

// WriteAhead writes p, the title's bytes at offset off (bytes) read from
// the origin far ahead of its fill (an RTSP viewer's seek there), into
// the title's file at their own offset, for ReadAt to read them before
// the fill reaches them. The fill's view is unchanged (it is still the
// prefix the fill wrote): only the reader that wrote them knows they are
// there. The fill writes the same bytes again when it gets there (the
// origin sends the title's version only, FetchRequest.if_version), and a
// fill that stops cuts the file to its prefix (keepBytes; after a crash,
// resumeFrom cuts it at the zeros before them). It writes nothing once
// the fill has passed off+len(p) or the title is complete. Errors:
// ErrClosed, the fill's once it failed, ErrNotWritable before the fill
// receives the origin's bytes or once it stopped (AheadWritable), the
// write's.
func (t *Title) WriteAhead(p []byte, off int64) error {
	if t.file == nil {
		return ErrClosed
	}
	t.aheadMu.Lock()
	defer t.aheadMu.Unlock()
	v := t.view.Load()
	switch {
	case v.Err != nil:
		return v.Err
	case v.Complete || v.Index.Size >= off+int64(len(p)):
		return nil
	case !t.aheadOK:
		return ErrNotWritable
	}
	if _, err := t.file.WriteAt(p, off); err != nil {
		if errors.Is(err, os.ErrClosed) {
			return ErrClosed
		}
		return err
	}
	return nil
}

// ErrNotWritable is WriteAhead's error while the title's fill is not
// receiving the origin's bytes (AheadWritable).
var ErrNotWritable = errors.New("store: the title's fill is not receiving the origin's bytes")

// AheadWritable reports whether WriteAhead may write into the title's
// file now: its fill has made room for the title and receives the
// origin's bytes (the check of a partial it resumes from, which may cut
// the file, is done), and has not stopped.
func (t *Title) AheadWritable() bool {
	t.aheadMu.Lock()
	defer t.aheadMu.Unlock()
	return t.aheadOK
}

// Notify arranges for fn to be called once, from the fill's goroutine, as
// soon as more than after bytes are readable, or the title is complete, or
// its fill failed. It returns false, without registering fn, when that is
// already the case.
func (t *Title) Notify(after int64, fn func()) bool {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	v := t.view.Load()
	if v.Index.Size > after || v.Complete || v.Err != nil {
		return false
	}
	t.waiters = append(t.waiters, waiter{after: after, fn: fn})
	return true
}

// publish makes v the current view and wakes the waiters it satisfies.
func (t *Title) publish(v *View) {
	t.wmu.Lock()
	t.view.Store(v)
	var due []func()
	keep := t.waiters[:0]
	for _, w := range t.waiters {
		if v.Index.Size > w.after || v.Complete || v.Err != nil {
			due = append(due, w.fn)
		} else {
			keep = append(keep, w)
		}
	}
	clear(t.waiters[len(keep):])
	t.waiters = keep
	t.wmu.Unlock()
	for _, fn := range due {
		fn()
	}
}
