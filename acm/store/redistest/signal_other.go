//go:build !unix

package redistest

import "os"

// sigStop and sigCont are nil where a process cannot be stopped by a
// signal: Server.Pause skips its test.
var sigStop, sigCont os.Signal
