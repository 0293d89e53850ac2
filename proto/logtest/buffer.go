// Package logtest holds what tests of the cluster's processes share to
// read what a process logs (slog text or JSON) while it runs.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for one writer (a slog handler, a
// process's stderr) and readers at once. Its zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never returns an error.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
