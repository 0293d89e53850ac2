package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Key prefixes of the badger layout.
var (
	prefixSession = []byte("session/")
	prefixTitle   = []byte("title/")
	prefixState   = []byte("state/")
)

// gcInterval is how often Badger runs value-log garbage collection.
const gcInterval = 10 * time.Minute

// Badger is the embedded Store: a badger/v4 database in one directory,
// written synchronously (a call returns after the write is on disk).
type Badger struct {
	db   *badger.DB
	lock *os.File // holds dirLockFile's flock until Close (nil where there is none)
	stop chan struct{}
	done chan struct{}

	mu     sync.RWMutex
	closed bool
}

var _ Store = (*Badger)(nil)

// ErrLocked is returned (wrapped, naming the directory) by OpenBadger when
// another process, or another Badger in this one, holds the directory.
var ErrLocked = errors.New("store: data directory in use by another process")

// dirLockFile is the file in the data directory whose flock(2) the Badger
// holds while open (lockDataDir): another holder is told by its errno
// (EWOULDBLOCK), not by badger's error text, which it gives for any
// failure of its own lock (ENOLCK on a file system without locks too).
const dirLockFile = "vodcluster.lock"

// badgerLockedText is how badger/v4 words its refusal of a directory
// another process holds (dir_unix.go): it does not wrap the flock error,
// so the text is the only sign of it. Our own lock (dirLockFile) comes
// first; this is for a holder that does not take it (a badger tool, a
// system without flock).
const badgerLockedText = "Cannot acquire directory lock"

// OpenBadger opens (creating it if needed) the store in dir. logger, when
// not nil, receives badger's warnings and errors. It fails when dir cannot
// be created, with ErrLocked (naming dir) when another process, or another
// Badger in this one, holds it, or with an error naming dir and the errno
// when it cannot be locked (ENOLCK: a file system without locks).
func OpenBadger(dir string, logger *slog.Logger) (*Badger, error) {
	if dir == "" {
		return nil, fmt.Errorf("store: empty data directory")
	}
	lock, err := lockDataDir(dir)
	if err != nil {
		return nil, err
	}
	unlock := func() {
		if lock != nil {
			lock.Close()
		}
	}
	opts := badger.DefaultOptions(dir).
		WithSyncWrites(true).
		WithNumVersionsToKeep(1).
		WithMemTableSize(16 << 20).
		WithBlockCacheSize(16 << 20).
		WithValueLogFileSize(64 << 20).
		WithLogger(badgerLogger{logger})
	db, err := badger.Open(opts)
	if err != nil && strings.Contains(err.Error(), badgerLockedText) {
		unlock()
		return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
	}
	if err != nil {
		unlock()
		return nil, fmt.Errorf("store: open %s: %w", dir, err)
	}
	b := &Badger{db: db, lock: lock, stop: make(chan struct{}), done: make(chan struct{})}
	go b.gcLoop()
	return b, nil
}

func (b *Badger) gcLoop() {
	defer close(b.done)
	t := time.NewTicker(gcInterval)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			for b.db.RunValueLogGC(0.5) == nil {
			}
		}
	}
}

// Close implements Store; closing twice is not an error.
func (b *Badger) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	close(b.stop)
	<-b.done
	err := b.db.Close()
	if b.lock != nil {
		b.lock.Close() // releases the flock: another manager can open dir
	}
	return err
}

// guard holds the read lock while the database is open; it fails with
// ErrClosed after Close and with ctx's error when ctx is done (badger's
// calls are local and short: a context is only checked before them).
func (b *Badger) guard(ctx context.Context) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return nil, ErrClosed
	}
	return b.mu.RUnlock, nil
}

func key(prefix []byte, id string) []byte {
	return append(append([]byte(nil), prefix...), id...)
}

// PutSession implements Store.
func (b *Badger) PutSession(ctx context.Context, s Session) error {
	if s.ID == "" {
		return fmt.Errorf("store: session without id")
	}
	v, err := json.Marshal(&s)
	if err != nil {
		return fmt.Errorf("store: session %s: %w", s.ID, err)
	}
	unlock, err := b.guard(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return b.db.Update(func(txn *badger.Txn) error { return txn.Set(key(prefixSession, s.ID), v) })
}

// DeleteSession implements Store.
func (b *Badger) DeleteSession(ctx context.Context, id string) error {
	unlock, err := b.guard(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return b.db.Update(func(txn *badger.Txn) error { return txn.Delete(key(prefixSession, id)) })
}

// Session implements Store.
func (b *Badger) Session(ctx context.Context, id string) (Session, error) {
	unlock, err := b.guard(ctx)
	if err != nil {
		return Session{}, err
	}
	defer unlock()
	var s Session
	err = b.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(key(prefixSession, id))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return fmt.Errorf("%w: session %s", ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		return it.Value(func(v []byte) (err error) { s, err = decodeSession(id, v); return err })
	})
	return s, err
}

// Sessions implements Store. A skipped entry has no Remove: it stays.
func (b *Badger) Sessions(ctx context.Context) ([]Session, []Skipped, error) {
	var out []Session
	var skipped []Skipped
	err := b.scan(ctx, prefixSession, func(id string, v []byte) error {
		s, err := decodeSession(id, v)
		if err != nil {
			skipped = append(skipped, Skipped{ID: id, Err: err})
			return nil
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, skipped, nil
}

// PutState implements Store. It fails on a name that does not match
// StateNamePattern.
func (b *Badger) PutState(ctx context.Context, name string, value []byte) error {
	if !StateNamePattern.MatchString(name) {
		return fmt.Errorf("store: state name %q: want %s", name, StateNamePattern)
	}
	unlock, err := b.guard(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	v := append([]byte(nil), value...)
	return b.db.Update(func(txn *badger.Txn) error { return txn.Set(key(prefixState, name), v) })
}

// State implements Store.
func (b *Badger) State(ctx context.Context, name string) ([]byte, error) {
	unlock, err := b.guard(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []byte
	err = b.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(key(prefixState, name))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return fmt.Errorf("%w: state %s", ErrNotFound, name)
		}
		if err != nil {
			return err
		}
		out, err = it.ValueCopy(nil)
		return err
	})
	return out, err
}

// Titles implements Store; the error of an entry that does not decode
// names its title.
func (b *Badger) Titles(ctx context.Context) ([]Title, error) {
	var out []Title
	err := b.scan(ctx, prefixTitle, func(id string, v []byte) error {
		t, err := decodeTitle(id, v)
		if err != nil {
			return err
		}
		out = append(out, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scan calls fn with the id (the key after prefix) and the value of each
// entry under prefix, in key order, until fn fails.
func (b *Badger) scan(ctx context.Context, prefix []byte, fn func(id string, v []byte) error) error {
	unlock, err := b.guard(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return b.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 100})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			id := string(bytes.TrimPrefix(it.Item().Key(), prefix))
			var ferr error
			if err := it.Item().Value(func(v []byte) error { ferr = fn(id, v); return nil }); err != nil {
				return fmt.Errorf("store: %s: %w", it.Item().Key(), err)
			}
			if ferr != nil {
				return ferr
			}
		}
		return nil
	})
}

// ReplaceTitles implements Store. A catalog too large for one transaction
// is written in several; a crash in between leaves a mix of the old and
// the new catalog, which the next refresh repairs.
func (b *Badger) ReplaceTitles(ctx context.Context, titles []Title) error {
	want := make(map[string][]byte, len(titles))
	for i := range titles {
		if titles[i].ID == "" {
			return fmt.Errorf("store: title without id")
		}
		v, err := json.Marshal(&titles[i])
		if err != nil {
			return fmt.Errorf("store: title %s: %w", titles[i].ID, err)
		}
		want[titles[i].ID] = v
	}
	unlock, err := b.guard(ctx)
	if err != nil {
		return err
	}
	defer unlock()

	// Keys to delete: stored titles absent from the new catalog; values
	// equal to the stored ones are not rewritten.
	var del [][]byte
	err = b.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixTitle, PrefetchValues: true, PrefetchSize: 100})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			id := string(bytes.TrimPrefix(it.Item().Key(), prefixTitle))
			v, ok := want[id]
			if !ok {
				del = append(del, it.Item().KeyCopy(nil))
				continue
			}
			same := false
			if err := it.Item().Value(func(old []byte) error { same = bytes.Equal(old, v); return nil }); err != nil {
				return err
			}
			if same {
				delete(want, id)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	txn := b.db.NewTransaction(true)
	defer func() { txn.Discard() }()
	apply := func(op func(*badger.Txn) error) error {
		err := op(txn)
		if errors.Is(err, badger.ErrTxnTooBig) {
			if err := txn.Commit(); err != nil {
				return err
			}
			txn = b.db.NewTransaction(true)
			err = op(txn)
		}
		return err
	}
	for _, k := range del {
		if err := apply(func(t *badger.Txn) error { return t.Delete(k) }); err != nil {
			return err
		}
	}
	for id, v := range want {
		k := key(prefixTitle, id)
		if err := apply(func(t *badger.Txn) error { return t.Set(k, v) }); err != nil {
			return err
		}
	}
	return txn.Commit()
}

// badgerLogger forwards badger's warnings and errors to slog and drops its
// info and debug chatter.
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) Errorf(f string, a ...any) {
	if b.l != nil {
		b.l.Error(fmt.Sprintf(f, a...), "component", "badger")
	}
}

func (b badgerLogger) Warningf(f string, a ...any) {
	if b.l != nil {
		b.l.Warn(fmt.Sprintf(f, a...), "component", "badger")
	}
}

func (badgerLogger) Infof(string, ...any)  {}
func (badgerLogger) Debugf(string, ...any) {}
