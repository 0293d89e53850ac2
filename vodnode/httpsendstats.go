package vodnode

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"

	"vodcluster/vodnode/store"
)

// Causes of an HTTP send of a title's bytes copied through the node's
// buffers instead of sent with sendfile(2) (vodnode_http_send_fallbacks_total).
const (
	// fallbackReopen: the title's file could not be opened again for the
	// send (activityWriter.ReadFrom sends from a descriptor of its own).
	fallbackReopen = "reopen"
	// fallbackWriter: the response writer takes no file (no ReadFrom).
	fallbackWriter = "writer"
	// fallbackConnection: net/http or the connection copied the file
	// handed to it (a connection other than a plain TCP one, or a kernel
	// or file that refused sendfile).
	fallbackConnection = "connection"
)

// fallbackCauses lists the causes, in the order of sendStats.fallbacks.
var fallbackCauses = [...]string{fallbackReopen, fallbackWriter, fallbackConnection}

// sendStats counts what the node's HTTP sends of titles could not do as
// meant: sends copied instead of sent with sendfile, by cause, and reads
// of a title's file that failed during a send (an HTTP send's or an RTSP
// stream's, streamReadError).
type sendStats struct {
	fallbacks  [len(fallbackCauses)]atomic.Int64
	logged     [len(fallbackCauses)]atomic.Bool // the cause was logged (once per node)
	diskErrors atomic.Int64
}

// sendFallback counts an HTTP send of title copied for cause (one of
// fallbackCauses) and logs the first of each cause, at info, with err
// (what made it, nil if none).
func (n *Node) sendFallback(cause, title string, err error) {
	for i, c := range fallbackCauses {
		if c != cause {
			continue
		}
		n.send.fallbacks[i].Add(1)
		if !n.send.logged[i].Swap(true) {
			args := []any{"cause", cause, "title", title}
			if err != nil {
				args = append(args, "err", err)
			}
			n.log.Info("HTTP send copied through the node instead of sendfile (logged once per cause; vodnode_http_send_fallbacks_total counts them)", args...)
		}
		return
	}
}

// sendFallbacks returns the HTTP sends copied instead of sent with
// sendfile since Start, by cause.
func (n *Node) sendFallbacks() map[string]int64 {
	m := make(map[string]int64, len(fallbackCauses))
	for i, c := range fallbackCauses {
		m[c] = n.send.fallbacks[i].Load()
	}
	return m
}

// diskReadError counts a read of hs's title's file at offset off that
// failed during an HTTP send (err: the read's error; io.ErrUnexpectedEOF:
// the file ended short of the bytes its index has), logs it as a warning
// and has the store check the copy (store.Store.ReadFailed: one cut short
// or unreadable is dropped, to be filled again). A title closed under the
// send (the node closing) is no disk error: not counted.
func (n *Node) diskReadError(hs *httpSession, off int64, err error) {
	if errors.Is(err, store.ErrClosed) || errors.Is(err, os.ErrClosed) {
		return
	}
	n.send.diskErrors.Add(1)
	n.log.Warn("reading a title's file failed during an HTTP send: the viewer's response is cut short", "title", hs.title, "offset", off, "err", err)
	if hs.t() != nil {
		n.store.ReadFailed(hs.t(), err)
	}
}

// clientWriteError reports whether err, a send's, says the client's side
// failed: its write deadline passed (a player that stopped reading), or
// its connection is gone (closed, reset, a broken pipe).
func clientWriteError(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// sendFile is a title's file as activityWriter.ReadFrom hands it to the
// connection: a syscall.Conn, which net's sendfile takes as it does an
// *os.File; its Read, called only when the connection copies the bytes
// instead, notes that and the file's read error, so that ReadFrom tells a
// copy from sendfile, and the file's error from the socket's.
type sendFile struct {
	f       *os.File
	copied  bool  // Read was called: the connection copied
	readErr error // Read's error, io.EOF aside
}

// SyscallConn returns the file's (net's sendfile reads from its descriptor).
func (s *sendFile) SyscallConn() (syscall.RawConn, error) { return s.f.SyscallConn() }

func (s *sendFile) Read(p []byte) (int, error) {
	s.copied = true
	n, err := s.f.Read(p)
	if err != nil && err != io.EOF {
		s.readErr = err
	}
	return n, err
}

// fileError returns the error of reading f at off, where a send that
// failed stopped: nil if a byte reads there (the send's error was then the
// socket's), io.ErrUnexpectedEOF if the file ends there.
func fileError(f *os.File, off int64) error {
	var b [1]byte
	_, err := f.ReadAt(b[:], off)
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
