//go:build unix

package store

import "golang.org/x/sys/unix"

// fsAvail returns the bytes free for an unprivileged process on the file
// system holding dir (statfs(2): f_bavail blocks of f_bsize bytes); false
// when statfs fails.
func fsAvail(dir string) (int64, bool) {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
