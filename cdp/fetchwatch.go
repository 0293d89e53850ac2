package cdp

import (
	"context"
	"io/fs"
	"os"
	"sync"
	"time"
)

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

// stat returns the FileInfo of the file at path (os.Stat; tests may put
// another in Server.statFile).
func (s *Server) stat(path string) (fs.FileInfo, error) {
	if s.statFile != nil {
		return s.statFile(path)
	}
	return os.Stat(path)
}
