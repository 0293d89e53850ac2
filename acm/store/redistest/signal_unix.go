//go:build unix

package redistest

import (
	"os"
	"syscall"
)

// sigStop and sigCont stop and resume a process (Server.Pause, Resume).
var sigStop, sigCont os.Signal = syscall.SIGSTOP, syscall.SIGCONT
