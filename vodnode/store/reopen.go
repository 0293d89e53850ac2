package store

import (
	"os"
	"strconv"
)

// Reopen returns a new read-only descriptor of the title's file, with an
// offset of its own (sendfile(2) sends from its source's offset, so
// readers cannot share one): the same file, even once a fill renamed it
// (Linux: opened through /proc/self/fd). The caller closes it. Errors:
// ErrClosed, or the open's (no /proc).
func (t *Title) Reopen() (*os.File, error) {
	if t.file == nil {
		return nil, ErrClosed
	}
	sc, err := t.file.SyscallConn()
	if err != nil {
		return nil, err
	}
	var f *os.File
	// opened within Control: the descriptor cannot be closed (and its
	// number reused) meanwhile
	if cerr := sc.Control(func(fd uintptr) {
		f, err = os.Open("/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10))
	}); cerr != nil {
		return nil, cerr
	}
	return f, err
}
