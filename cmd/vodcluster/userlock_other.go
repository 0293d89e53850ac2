//go:build !unix

package main

// lockUsersDir does nothing where flock(2) is not available: edits of a
// users file must not run at once there.
func lockUsersDir(string) (unlock func(), err error) { return func() {}, nil }
