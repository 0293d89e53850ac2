//go:build unix

package main

import (
	"os"
	"syscall"
)

// keepOwner gives path the owner and group of old, when they differ from
// what path has (changing them needs the privilege to).
func keepOwner(path string, old os.FileInfo) error {
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	cur, err := os.Stat(path)
	if err != nil {
		return err
	}
	if c, ok := cur.Sys().(*syscall.Stat_t); ok && c.Uid == st.Uid && c.Gid == st.Gid {
		return nil
	}
	return os.Chown(path, int(st.Uid), int(st.Gid))
}
