package store

import (
	"os"
	"strconv"
)

// Reopen returns a new read-only descriptor of the title's file, with an
// offset of its own (sendfile(2) sends from its source's offset, so
// readers cannot share one): the same file, even once a fill renamed it
// (Linux: opened through /proc/self/fd). The caller closes it. Errors:
// ErrClosed (this package's: the title's file was closed, the store
// closed or the title removed), or the open's, an *fs.PathError (no
// /proc; the file's permissions, checked again, refuse a read).
func (t *Title) Reopen() (*os.File, error) {
	if t.file == nil {
		return nil, ErrClosed
	}
	sc, err := t.file.SyscallConn()
	if err != nil {
		return nil, ErrClosed // only for a Title with no file: t.file is valid
	}
	var f *os.File
	// opened within Control: the descriptor cannot be closed (and its
	// number reused) meanwhile
	if cerr := sc.Control(func(fd uintptr) {
		f, err = os.Open("/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10))
	}); cerr != nil {
		return nil, ErrClosed // Control fails only on a closed file ("use of closed file")
	}
	return f, err
}
