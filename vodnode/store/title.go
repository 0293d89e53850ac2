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
	// stopped: the fill was cancelled before its end (preempted, or
	// abandoned by its viewers: Store.Release); a reader asking for the
	// title meanwhile waits for done rather than join it (Store.get).
	stopped bool
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
