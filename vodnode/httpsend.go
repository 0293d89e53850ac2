package vodnode

import (
	"io"
	"time"
)

// sendChunk is how many bytes of a title a progressive download sends at
// a time with sendfile (each paced and given its write deadline): what
// io.Copy's buffer gave the copy through titleReader.Read.
const sendChunk = 32 << 10

// ReadFrom sends what ServeContent copies (io.CopyN hands the body over
// limited to its range). A progressive download's bytes (a titleReader
// that may use sendfile) go from the title's file to the connection with
// sendfile(2) (net/http's response.ReadFrom to net.TCPConn's), not
// through a buffer of the node's: paced, awaited, checked and counted as
// titleReader.Read does, sendChunk bytes at a time, on a descriptor of
// the title's file of the request's own (sendfile moves its source's
// offset). Anything else, or a title whose file cannot be opened again,
// is copied as io.Copy does.
func (a *activityWriter) ReadFrom(src io.Reader) (int64, error) {
	lr, ok := src.(*io.LimitedReader)
	var tr *titleReader
	if ok {
		tr, ok = lr.R.(*titleReader)
	}
	rf, rfOK := a.ResponseWriter.(io.ReaderFrom)
	if !ok || !rfOK || !tr.sendfile {
		return io.Copy(writerOnly{a}, src)
	}
	f, err := tr.hs.t.Reopen()
	if err != nil {
		return io.Copy(writerOnly{a}, src)
	}
	defer f.Close()
	var sent int64
	pos := int64(-1) // f's offset
	for lr.N > 0 {
		k, err := tr.next(int(min(lr.N, sendChunk)))
		if err == io.EOF {
			return sent, nil
		}
		if err != nil {
			return sent, err
		}
		if pos != tr.off {
			if pos, err = f.Seek(tr.off, io.SeekStart); err != nil {
				return sent, err
			}
		}
		tr.deadline()
		n, err := rf.ReadFrom(&io.LimitedReader{R: f, N: int64(k)})
		pos += n
		tr.advance(int(n))
		lr.N -= n
		sent += n
		if err != nil {
			a.failed = true
			return sent, err
		}
		a.lastOK = time.Now()
		if n < int64(k) {
			return sent, io.ErrUnexpectedEOF // the file shorter than its index
		}
	}
	return sent, nil
}

// writerOnly hides a writer's ReadFrom from io.Copy.
type writerOnly struct{ io.Writer }
