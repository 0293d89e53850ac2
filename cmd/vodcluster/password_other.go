//go:build !linux

package main

import "os"

// noEcho reports no terminal where its echo cannot be turned off here:
// the password is read from standard input without a prompt.
func noEcho(*os.File) (restore func(), ok bool) { return nil, false }
