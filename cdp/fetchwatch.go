package cdp

import (
	"context"
	"io/fs"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/proto/durtext"
)

// StatTimeout bounds the stat of a title's file a Fetch makes before it
// queues for a channel, and GetTitle's: a stat that has not returned by
// then (a failing disk, a hung network file system) is answered
// UNAVAILABLE, which a node retries within its retry window
// (fill_retry_for), rather than holding the call with no bound (a node
// bounds a transfer's silence only from the origin's started message,
// after the queue, and would take the hung stat for a wait in the queue).
// A stat on a healthy disk takes well under a millisecond, on a slow
// network file system a fraction of a second; 2 s is the time a node
// gives GetTitle before a fill, a fifth of its StallAfter default (the
// bound of a started transfer's silence), so that a hung stat costs a
// node's fill no more than a stalled transfer would, and leaves it most
// of its retry window (30 s by default) for the disk to come back.
const StatTimeout = 2 * time.Second

// abandonedWarn is how long after its caller left a transfer must take to
// return for the origin to warn of a hung file operation: a transfer
// cancelled mid-send returns at once.
const abandonedWarn = 5 * time.Second

// watchLeft watches a file operation of a Fetch of title t from offset
// off, one no context interrupts (a stat, an open or a read hung on a
// failing disk or a network file system), from now until the function it
// returns is called, when the operation has returned. If the caller
// leaves first (ctx ends), onLeft runs at once (nil: nothing to give
// back) and the operation counts in Stats.Abandoned
// (cdp_transfers_abandoned) until it returns; one that returns
// abandonedWarn or more after its caller left is logged as a warning
// naming what hung (what), the title and its path.
func (s *Server) watchLeft(ctx context.Context, t Title, off int64, what string, onLeft func()) (returned func()) {
	var mu sync.Mutex
	var done bool
	var left time.Time // when the caller left before the operation returned
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		if !done {
			left = time.Now()
			s.stats.abandoned(1)
		}
		mu.Unlock()
		if onLeft != nil {
			onLeft()
		}
	})
	return func() {
		mu.Lock()
		done = true
		l := left
		mu.Unlock()
		stop()
		if l.IsZero() {
			return
		}
		s.stats.abandoned(-1)
		if after := time.Since(l); after >= abandonedWarn {
			s.log.Warn(what+" returned long after its caller left: a file operation hung",
				"title", t.ID, "offset", off, "after", after.Round(time.Millisecond), "path", t.Path)
		}
	}
}

// statTitle returns the stat of t's file (stat: its FileInfo and error)
// for a Fetch from offset off or a GetTitle (what names which, for
// watchLeft's warning), waiting at most StatTimeout (Server.statWait in
// tests); err, when the stat did not answer, is UNAVAILABLE when it has
// not returned by then, the status of ctx's end when the caller left
// first. The stat is watched (watchLeft) while it runs: one this
// call no longer waits for (its timeout, or its caller gone) counts in
// Stats.Abandoned until it returns, in a goroutine of its own that ends
// then (no context interrupts a stat), its answer dropped.
func (s *Server) statTitle(ctx context.Context, t Title, off int64, what string) (st fs.FileInfo, statErr, err error) {
	wctx, leave := context.WithCancel(ctx)
	defer leave() // the stat, if it has not returned, counts as abandoned from here
	statted := s.watchLeft(wctx, t, off, what, nil)
	type answer struct {
		st  fs.FileInfo
		err error
	}
	done := make(chan answer, 1)
	go func() {
		st, err := s.stat(t.Path)
		statted()
		done <- answer{st, err}
	}()
	wait := StatTimeout
	if s.statWait > 0 {
		wait = s.statWait
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case a := <-done:
		return a.st, a.err, nil
	case <-ctx.Done():
		return nil, nil, status.FromContextError(ctx.Err()).Err()
	case <-timer.C:
		s.log.Warn("the stat of a title's file did not return in time: the call is answered UNAVAILABLE (a failing disk, a hung network file system?)",
			"title", t.ID, "path", t.Path, "after", durtext.Written(wait), "in", what)
		return nil, nil, status.Errorf(codes.Unavailable, "title %q: the origin's stat of its file did not return within %s (its disk or network file system is failing or hung); retry",
			t.ID, durtext.Written(wait))
	}
}

// stat returns the FileInfo of the file at path (os.Stat; tests may put
// another in Server.statFile).
func (s *Server) stat(path string) (fs.FileInfo, error) {
	if s.statFile != nil {
		return s.statFile(path)
	}
	return os.Stat(path)
}
