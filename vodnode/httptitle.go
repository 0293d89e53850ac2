package vodnode

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"vodcluster/vodnode/store"
)

// titleReader reads a title for http.ServeContent: its size is the
// title's, and a read past the bytes on disk waits for the fill, but for
// a range that starts far ahead of the fill (originAhead), read from the
// origin until the fill reaches it. With rc,
// each read gives the write of what it returns stall to complete (a
// client that stops reading, paused or hung, is disconnected after
// stall; its session then ends PauseTimeout later unless it asks
// again, as a paused player does when it resumes).
type titleReader struct {
	hs  *httpSession
	n   *Node
	ctx context.Context
	// conn is the request's connection (nil: not known): what it never
	// delivered is taken back from the session's count.
	conn *httpConn
	off  int64
	// reading: Read was called (ServeContent seeks to the end and back
	// before; only where the first read starts tells a seek).
	reading bool
	rc      *http.ResponseController
	stall   time.Duration
	// sendfile: activityWriter.ReadFrom may send the bytes with
	// sendfile(2) (httpsend.go); not over TLS, which encrypts them in the
	// node.
	sendfile bool
	// ahead: the origin's read of a range that starts far ahead of the
	// fill (openAhead), until the fill reaches where it is; nil
	// otherwise. When fromAhead, the bytes next allowed are in aheadBuf
	// (read from ahead), not in the title's file.
	ahead     *aheadRead
	aheadBuf  []byte
	fromAhead bool
	// aheadNext is when a range far ahead of the fill may ask the origin
	// again after its read was refused or ended (zero: now); aheadStep the
	// pause after the next refusal (aheadRetry doubling to aheadRetryMax).
	aheadNext time.Time
	aheadStep time.Duration
	// noAhead: a newer range of the session took this one's origin read,
	// or holds one (aheadSlots); it waits for the fill from then on.
	noAhead bool
	// seq orders the session's ranges (httpSession.aheadSeq), set when
	// the range first asks the origin; slotRefused: its last ask found the
	// node's reads taken (it asks again as soon as one is given back).
	seq         int64
	slotRefused bool
	// rangeEnd is where the range ServeContent sends ends (the offset
	// after its last byte; activityWriter.ReadFrom), 0 when not known (a
	// part of a multipart answer): an origin read ahead of the fill asks
	// for no more than that.
	rangeEnd int64
	// fillWake, when not nil, is closed once the fill has passed the
	// offset it was registered at (Title.Notify): one waiter per reader,
	// kept across the wakes to ask the origin again.
	fillWake chan struct{}
	// hold is the response writer whose status line (heldHeader) waits
	// for the first bytes next finds, when the body is read on the
	// handler's goroutine (activityWriter.ReadFrom); nil otherwise.
	hold *activityWriter
	// err is the error next last failed with.
	err error
}

func (r *titleReader) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += r.off
	case io.SeekEnd:
		off += r.hs.meta.Size
	}
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off != r.off {
		r.closeAhead() // it reads from r.off on
		r.aheadNext, r.aheadStep = time.Time{}, 0
		r.fillWake = nil // registered for the old offset
	}
	r.off = off
	return off, nil
}

func (r *titleReader) Read(p []byte) (int, error) {
	k, err := r.next(len(p))
	if err != nil {
		return 0, err
	}
	if r.fromAhead {
		copy(p, r.aheadBuf[:k])
		r.armIdle()
		r.deadline()
		r.advance(k)
		return k, nil
	}
	n, err := r.hs.t().ReadAt(p[:k], r.off)
	if err != nil && n < k {
		if err == io.EOF && n == 0 {
			err = io.ErrUnexpectedEOF // the file shorter than its index
		}
		if err != io.EOF {
			r.n.diskReadError(r.hs, r.off+int64(n), err)
		}
	}
	r.deadline()
	r.advance(n)
	if err == io.EOF && n > 0 {
		err = nil // the next read finds the file's end
	}
	return n, err
}

// next returns how many bytes (at most want, and 64 KiB) may be sent from
// r.off now, once the fill has any there (or the origin's read of a range
// far ahead of the fill gave them: fromAhead) and the viewer's pace allows
// them: io.EOF at the title's end; the context's error once the session
// ended or the client left; the fill's once it failed short of r.off.
func (r *titleReader) next(want int) (int, error) {
	k, err := r.nextBytes(want)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return k, err
}

// fillErr returns the title's fill's error when the reader failed for
// it: with no bytes past r.off after the fill failed, or cut by the end
// of its session, which the fill's failure ended (fillFailedEmpty); nil
// otherwise.
func (r *titleReader) fillErr() error {
	if r.err == nil {
		return nil
	}
	if errors.Is(r.err, store.ErrFillFailed) {
		return r.err
	}
	if _, ok, err := filledPast(r.hs.t(), r.off); ok && err != nil {
		return err
	}
	return nil
}

func (r *titleReader) nextBytes(want int) (int, error) {
	if r.off >= r.hs.meta.Size {
		return 0, io.EOF
	}
	if err := r.ctx.Err(); err != nil {
		return 0, err // the session ended, or the client left
	}
	if want <= 0 {
		return 0, nil
	}
	want = min(want, 64<<10)
	k := 0
	for k == 0 {
		var err error
		if k, err = r.nextAhead(want); err != nil {
			return 0, err
		}
		if k > 0 {
			break
		}
		avail, err := r.waitFill(!r.noAhead && r.farAhead())
		if err != nil {
			return 0, err
		}
		if avail > 0 && avail <= r.off {
			return 0, errPastCopy // complete, and ending before the read: it spun here
		}
		if avail > 0 {
			k = int(min(int64(want), avail-r.off))
		}
	}
	if r.hold != nil {
		r.hold.release() // the first bytes are there: the answer goes out
	}
	if !r.reading {
		r.reading = true
		if r.hs.bytes.Load() > 0 && r.off != r.hs.readTo.Load() {
			r.hs.pacing.seeked(time.Now()) // a range elsewhere than where the viewer was
		}
	}
	if err := r.hs.pacing.wait(r.ctx, k); err != nil {
		return 0, err
	}
	return k, nil
}

// deadline gives the write of the bytes next allowed stall to complete.
func (r *titleReader) deadline() {
	if r.rc != nil && r.stall > 0 {
		_ = r.rc.SetWriteDeadline(time.Now().Add(r.stall))
	}
}

// advance counts n bytes sent from r.off.
func (r *titleReader) advance(n int) {
	r.off += int64(n)
	r.hs.readTo.Store(r.off)
	r.conn.countSent(r.n, r.hs, int64(n))
}

// waitBytes waits until title t has bytes past off on disk and returns how
// many it has (the file size once complete). Errors: the fill's once it
// failed with no bytes past off (those before are still served), or ctx's.
func waitBytes(ctx context.Context, t *store.Title, off int64) (int64, error) {
	for {
		if avail, ok, err := filledPast(t, off); ok {
			return avail, err
		}
		ch := make(chan struct{})
		if !t.Notify(off, func() { close(ch) }) {
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// errPastCopy ends a progressive read at an offset at or past the end of
// the complete copy held: the answer promised more bytes than the copy
// has (never expected: a session serves its copy's size, adoptHeldMeta),
// so it is cut, not waited on (it spun at the end of the copy).
var errPastCopy = errors.New("the range reaches past the end of the node's copy of the title")

// filledPast returns, with ok, how many bytes title t has on disk once it
// has some past off (the file's size once complete, which may be off: a
// wait at the end of the fill's last bytes), or the fill's error once it
// failed with none past off; ok is false while they are to come.
func filledPast(t *store.Title, off int64) (avail int64, ok bool, err error) {
	v := t.View()
	switch {
	case v.Complete:
		return t.Meta().Size, true, nil
	case v.Index.Size > off:
		return v.Index.Size, true, nil
	case v.Err != nil:
		return 0, true, v.Err
	}
	return 0, false, nil
}
