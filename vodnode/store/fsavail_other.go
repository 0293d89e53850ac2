//go:build !unix

package store

// fsAvail does not know the free bytes where statfs(2) does not exist.
func fsAvail(string) (int64, bool) { return 0, false }
