//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"vodcluster/proto/durtext"
)

// usersLockWait bounds how long `vodcluster user` waits for another one
// editing a users file in the same directory.
const usersLockWait = 30 * time.Second

// lockUsersDir takes an exclusive flock(2) on the directory of the users
// file at path and returns what releases it. The file's read, edit and
// rename happen under it: two edits at once (a provisioning script adding
// subscribers in parallel) each wrote the file as they had read it, and
// the subscribers the other added were lost. The directory is locked,
// not the file, which the rename replaces. It waits up to usersLockWait
// for another edit; errors name the directory.
func lockUsersDir(path string) (unlock func(), err error) {
	dir := filepath.Dir(path)
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("lock the users file's directory: %w", err)
	}
	deadline := time.Now().Add(usersLockWait)
	for {
		err = unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { d.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			d.Close()
			return nil, fmt.Errorf("lock %s (flock): %w", dir, err)
		}
		if time.Now().After(deadline) {
			d.Close()
			return nil, fmt.Errorf("%s: another vodcluster user has been editing a users file there for %s", dir, durtext.Written(usersLockWait))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
