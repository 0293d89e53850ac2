//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// flock is flock(2); tests replace it to make it fail as a file system
// without locks does.
var flock = unix.Flock

// lockDataDir takes an exclusive flock(2) (LOCK_EX|LOCK_NB) on dirLockFile
// in dir, creating dir (0700, as badger does) and the file (0600) when
// missing, and returns the file, whose Close releases the lock. It fails
// with ErrLocked, naming dir, when another process, or another Badger in
// this one, holds it (EWOULDBLOCK), and with an error naming dir and the
// errno for any other refusal (ENOLCK: a file system without locks, such
// as NFS without its lock daemon), which is not taken for another holder.
func lockDataDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: data directory: %w", err)
	}
	path := filepath.Join(dir, dirLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: data directory %s: lock file: %w", dir, err)
	}
	for {
		err = flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err == nil {
		return f, nil
	}
	f.Close()
	var errno unix.Errno
	switch {
	case errors.Is(err, unix.EWOULDBLOCK), errors.Is(err, unix.EAGAIN):
		return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
	case errors.As(err, &errno):
		return nil, fmt.Errorf("store: data directory %s: cannot lock %s (flock: %s, %w): is it on a file system without locks (NFS without its lock daemon)?", dir, path, unix.ErrnoName(errno), err)
	}
	return nil, fmt.Errorf("store: data directory %s: cannot lock %s (flock: %w)", dir, path, err)
}
