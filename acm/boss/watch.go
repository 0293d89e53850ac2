package boss

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultPollInterval is how often a WatchedFile looks whether its users
// file changed.
const DefaultPollInterval = 2 * time.Second

// WatchedFile is a users file (File) that is read again when it changes
// on disk: Watch polls its modification time, size and identity (a file
// renamed over it, as `vodcluster user --file` does) every Interval, and
// Reload reads it at once (the manager calls it on SIGHUP). A new file
// that does not parse, or whose realm differs from the one loaded first
// (the manager checked that realm against its own at start), is logged as
// an error naming the file and the line, and the users loaded before stay
// in use. Each load starts with an empty Basic credential cache, so a
// removed user or a changed password takes effect at once. It is safe for
// concurrent use.
type WatchedFile struct {
	// Interval is the polling period of Watch; 0 means
	// DefaultPollInterval. Set it before Watch.
	Interval time.Duration

	path  string
	realm string
	log   *slog.Logger
	cur   atomic.Pointer[File]

	mu   sync.Mutex  // serialises loads
	seen os.FileInfo // the file as last read (loaded or refused)
}

var (
	_ BOSS          = (*WatchedFile)(nil)
	_ PackageLister = (*WatchedFile)(nil)
)

// PackageHolders implements PackageLister for the file as last loaded.
func (w *WatchedFile) PackageHolders() map[string][]string {
	return w.cur.Load().PackageHolders()
}

// WatchFile loads the users file at path like LoadFile and returns it
// ready to be watched; logger (nil: slog.Default()) receives the reloads
// and the refused ones. It fails when the file cannot be read or parsed.
func WatchFile(path string, logger *slog.Logger) (*WatchedFile, error) {
	if logger == nil {
		logger = slog.Default()
	}
	w := &WatchedFile{path: path, log: logger}
	info, f, err := w.read()
	if err != nil {
		return nil, err
	}
	w.realm, w.seen = f.Realm(), info
	w.cur.Store(f)
	return w, nil
}

// read stats and loads the file.
func (w *WatchedFile) read() (os.FileInfo, *File, error) {
	info, err := os.Stat(w.path)
	if err != nil {
		return nil, nil, fmt.Errorf("boss: %w", err)
	}
	f, err := LoadFile(w.path)
	return info, f, err
}

// Path returns the users file's path.
func (w *WatchedFile) Path() string { return w.path }

// Realm returns the Digest realm of the users file, the one loaded first.
func (w *WatchedFile) Realm() string { return w.realm }

// Authenticate implements BOSS with the users loaded last.
func (w *WatchedFile) Authenticate(ctx context.Context, c Credentials) error {
	return w.cur.Load().Authenticate(ctx, c)
}

// Entitled implements BOSS with the users loaded last.
func (w *WatchedFile) Entitled(ctx context.Context, user, pkg string) (bool, error) {
	return w.cur.Load().Entitled(ctx, user, pkg)
}

// Users returns the number of users loaded last.
func (w *WatchedFile) Users() int { return len(w.cur.Load().users) }

// Reload reads the users file now, changed or not. On error (the file is
// missing, malformed or of another realm) it logs it, keeps the users
// loaded before and returns it.
func (w *WatchedFile) Reload() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.load()
}

// reloadIfChanged reloads the file when it is not the one last read: its
// identity, size or modification time differ. A file that cannot even be
// stat'ed (being replaced, or removed) is left for the next poll, except
// that its disappearance is logged once.
func (w *WatchedFile) reloadIfChanged() {
	w.mu.Lock()
	defer w.mu.Unlock()
	info, err := os.Stat(w.path)
	if err != nil {
		if w.seen != nil {
			w.log.Error("users file unreadable: keeping the users loaded before", "file", w.path, "err", err)
			w.seen = nil
		}
		return
	}
	if w.seen != nil && os.SameFile(info, w.seen) && info.Size() == w.seen.Size() && info.ModTime().Equal(w.seen.ModTime()) {
		return
	}
	_ = w.load()
}

// load reads the file and, when it is good, makes its users current.
// Called with mu held.
func (w *WatchedFile) load() error {
	info, f, err := w.read()
	if info != nil {
		w.seen = info // a refused file is not read again until it changes
	}
	if err == nil && f.Realm() != w.realm {
		err = fmt.Errorf("boss: %s: realm %q, but the manager runs with %q (restart it to change the realm)", w.path, f.Realm(), w.realm)
	}
	if err != nil {
		w.log.Error("users file not reloaded: keeping the users loaded before", "file", w.path, "err", err,
			"users", len(w.cur.Load().users))
		return err
	}
	w.cur.Store(f)
	w.log.Info("users file reloaded", "file", w.path, "users", len(f.users))
	return nil
}

// Watch polls the users file every Interval and reloads it when it
// changed, until ctx is done. The manager runs it for its lifetime.
func (w *WatchedFile) Watch(ctx context.Context) {
	every := w.Interval
	if every <= 0 {
		every = DefaultPollInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.reloadIfChanged()
		}
	}
}
