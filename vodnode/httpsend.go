package vodnode

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// sendChunk is how many bytes of a title a download sends at a time with
// sendfile (each paced, awaited and given its write deadline as one read
// of titleReader or pacedSection): what io.Copy's buffer gave the copy
// through their Read.
const sendChunk = 32 << 10

// ReadFrom sends what ServeContent copies (io.CopyN hands the body over
// limited to its range). The title's bytes of a progressive download (a
// titleReader) or of an HLS segment (a pacedSection: its PSI prefix is
// written from memory) go from the title's file to the connection with
// sendfile(2) (net/http's response.ReadFrom to net.TCPConn's), not
// through a buffer of the node's: paced, awaited, checked and counted as
// their Read does, sendChunk bytes at a time, from a descriptor of the
// title's file of the request's own (sendfile moves its source's
// offset). Anything else (a playlist, a multipart range answer, TLS) is
// copied as io.Copy does; so is a title's send that cannot use sendfile
// (its file cannot be opened again, the response writer or the
// connection takes no file), counted in vodnode_http_send_fallbacks_total
// by cause and logged once per cause (sendFallback). A read of the
// title's file that fails (an I/O error, the file shorter than its index)
// is counted in vodnode_disk_read_errors_total and logged, naming the
// title (diskReadError), and does not mark the viewer as stalled
// (activityWriter.failed): only the socket's failures do.
func (a *activityWriter) ReadFrom(src io.Reader) (int64, error) {
	lr, ok := src.(*io.LimitedReader)
	if !ok {
		return io.Copy(writerOnly{a}, src)
	}
	if _, ok := lr.R.(*io.PipeReader); ok {
		// A multipart answer (several ranges): ServeContent writes its
		// parts into a pipe from a goroutine of its own, whose reads of
		// the title wait for the fill there (no heldHeader: the first
		// part's header releases the status line). Each write is
		// flushed, or the status line and the parts sent reached the
		// client only with the bytes of the next part, when the fill
		// brought them.
		return io.Copy(flushWriter{a}, src)
	}
	if r, ok := lr.R.(*titleReader); ok {
		r.rangeEnd = r.off + lr.N // an origin read ahead of the fill stops there
		r.hold = a                // read on this goroutine: it releases a's status line held
	}
	var s sendSource
	switch r := lr.R.(type) {
	case *titleReader:
		if r.sendfile {
			s = titleSend{r}
		}
	case *pacedSection:
		if r.sendfile {
			s = sectionSend{r}
		}
	}
	if s == nil {
		return io.Copy(writerOnly{a}, src)
	}
	n, title := s.owner()
	rf, ok := a.ResponseWriter.(io.ReaderFrom)
	if !ok {
		n.sendFallback(fallbackWriter, title, nil)
		return io.Copy(writerOnly{a}, src)
	}
	f, err := s.reopen()
	if err != nil {
		n.sendFallback(fallbackReopen, title, err)
		return io.Copy(writerOnly{a}, src)
	}
	defer f.Close()
	sf := &sendFile{f: f}
	defer func() {
		if sf.copied {
			n.sendFallback(fallbackConnection, title, nil)
		}
	}()
	var sent int64
	pos := int64(-1) // f's offset
	flushed := false
	for lr.N > 0 {
		k, err := s.next(int(min(lr.N, sendChunk)))
		if err == io.EOF {
			return sent, nil
		}
		if err != nil {
			return sent, err
		}
		var n int64
		mem, off := s.chunk(k)
		// Counted before they are sent, as their Read counts what it
		// returns before the copy writes it: the node's count is never
		// behind what the viewer has (a client that read a whole title
		// finds it in Stats).
		s.advance(k)
		if len(mem) > 0 { // a segment's PSI prefix, or a range read from the origin
			m, err := a.Write(mem)
			n += int64(m)
			if err != nil {
				return sent + n, err
			}
		}
		if rest := int64(k) - n; rest > 0 {
			if !flushed {
				// The header written first: net/http copies through
				// Read the first bytes of a body whose header it has not
				// written yet (to sniff its type); that would count as
				// the connection copying.
				flushed = true
				if err := http.NewResponseController(a.ResponseWriter).Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
					a.failed = true
					return sent + n, err
				}
			}
			if pos != off {
				if pos, err = f.Seek(off, io.SeekStart); err != nil {
					s.diskError(off, err)
					return sent + n, err
				}
			}
			m, err := rf.ReadFrom(&io.LimitedReader{R: sf, N: rest})
			pos += m
			n += m
			a.fileBytes += m
			if err != nil {
				// The file's failure or the socket's: a copy saw the
				// file's; else, if the socket's error does not say, the
				// file is read where the send stopped.
				ferr := sf.readErr
				if ferr == nil && !clientWriteError(err) {
					ferr = fileError(f, pos)
				}
				if ferr != nil {
					s.diskError(pos, ferr)
				} else {
					a.failed = true
				}
				return sent + n, err
			}
			a.lastOK = time.Now()
			if m < rest { // sendfile met the file's end
				s.diskError(pos, io.ErrUnexpectedEOF)
				return sent + n, io.ErrUnexpectedEOF // the file shorter than its index
			}
		}
		lr.N -= n
		sent += n
	}
	return sent, nil
}

// sendSource is a paced reader of a title's bytes that ReadFrom sends
// with sendfile.
type sendSource interface {
	reopen() (*os.File, error)
	// next: how many bytes may be sent now (as the reader's Read would
	// read), or why none: io.EOF at the end.
	next(want int) (int, error)
	// chunk: of the next k bytes, those held in memory (sent first), and
	// the title's offset of the rest; the write deadline set.
	chunk(k int) (mem []byte, off int64)
	// advance counts n bytes as sent and moves past them.
	advance(n int)
	// owner: the node and the title sent.
	owner() (*Node, string)
	// diskError counts and logs err, reading the title's file at off.
	diskError(off int64, err error)
}

type titleSend struct{ *titleReader }

func (t titleSend) reopen() (*os.File, error) { return t.hs.t().Reopen() }

func (t titleSend) owner() (*Node, string) { return t.n, t.hs.title }

func (t titleSend) diskError(off int64, err error) { t.n.diskReadError(t.hs, off, err) }

func (t titleSend) chunk(k int) ([]byte, int64) {
	t.deadline()
	if t.fromAhead {
		t.armIdle()
		return t.aheadBuf[:k], t.off // read from the origin: not in the file
	}
	return nil, t.off
}

type sectionSend struct{ *pacedSection }

func (s sectionSend) reopen() (*os.File, error) { return s.hs.t().Reopen() }

func (s sectionSend) owner() (*Node, string) { return s.n, s.hs.title }

func (s sectionSend) diskError(off int64, err error) { s.n.diskReadError(s.hs, off, err) }

func (s sectionSend) chunk(k int) ([]byte, int64) {
	s.deadline()
	psi := int64(len(s.seg.psi))
	var mem []byte
	if s.pos < psi {
		mem = s.seg.psi[s.pos:min(psi, s.pos+int64(k))]
	}
	return mem, s.seg.start + s.pos + int64(len(mem)) - psi
}

func (s sectionSend) advance(n int) {
	s.pacedSection.advance(n)
	s.rd.Seek(s.pos, io.SeekStart) // where its Read would go on
}

// writerOnly hides a writer's ReadFrom from io.Copy.
type writerOnly struct{ io.Writer }

// flushWriter writes to a and flushes each write to the client.
type flushWriter struct{ a *activityWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.a.Write(p)
	if err == nil {
		_ = http.NewResponseController(f.a).Flush()
	}
	return n, err
}
