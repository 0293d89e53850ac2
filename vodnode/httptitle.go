package vodnode

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
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
	off int64
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
	ahead     *store.OriginRange
	aheadEnd  int64 // where ahead's bytes end (originAheadMax)
	aheadBuf  []byte
	fromAhead bool
	// aheadNext is when a range far ahead of the fill may ask the origin
	// again after its read was refused or ended (zero: now); aheadStep the
	// pause after the next refusal (aheadRetry doubling to aheadRetryMax).
	aheadNext time.Time
	aheadStep time.Duration
}

// originAhead is how far ahead of the part filled a range must start,
// in seconds of the title at its bitrate, for its bytes to be read from
// the origin rather than wait for the fill (which runs faster than the
// bitrate: a closer range waits less than this). libavformat's players
// (ffmpeg, ffprobe, ffplay, mpv) read a progressive .ts's last 250 kB
// before they play (its duration): of a title being filled, that waited
// for the whole fill.
const originAhead = 5 * time.Second

// originAheadMin is the least gap of originAhead, bytes (a low-bitrate
// title's five seconds).
const originAheadMin = 64 << 10

// originAheadMax bounds one origin read of a range ahead of the fill, in
// seconds of the title at its bitrate (originAheadMaxMin bytes at
// least): what a player's probes and seek search read, and the first
// seconds of a play that starts there; the rest waits for the fill. The
// transfer takes one of the origin's channels that the manager does not
// count (its budget is the fills'), but is preemptible: a fill that
// queues at the origin takes its channel (the range then waits for its
// own fill). Bounded so, and to maxOriginRanges at a time per node, it
// does not send the origin's bytes far ahead of the viewer's pace: once the
// viewer has reached its end with the fill still far behind (a viewer
// resuming a film far into it), the next read opens there.
var originAheadMax = 30 * time.Second

// originAheadMaxMin is the least bound of originAheadMax, bytes.
var originAheadMaxMin int64 = 1 << 20

// maxOriginRanges is how many origin reads of ranges ahead of their
// fill a node has open at a time; a range past it waits for its fill,
// and asks again (aheadRetry).
const maxOriginRanges = 1

// aheadRetry is the first pause before a range still far ahead of its
// fill asks the origin again after its read was refused (no channel free
// at the origin, another such read open on the node) or ended (a fill
// took its channel); each refusal in a row doubles it up to
// aheadRetryMax, jittered into [1/2, 1] of its step so that a node's
// waiting ranges do not ask together. Variables for tests.
var aheadRetry, aheadRetryMax = time.Second, 8 * time.Second

// farAhead reports whether r.off is far ahead of the title's fill
// (originAhead): its bytes are then read from the origin when it can.
func (r *titleReader) farAhead() bool {
	v := r.hs.t.View()
	if v.Complete || v.Err != nil {
		return false
	}
	gap := max(int64(originAhead.Seconds()*float64(r.hs.meta.Bitrate)/8), originAheadMin)
	return r.off-v.Index.Size >= gap
}

// openAhead opens the origin's read of the range from r.off when it is
// far ahead of the title's fill (farAhead), the node has no other open
// (maxOriginRanges) and the origin has a transfer channel free; else the
// range waits for the fill, and asks again at aheadNext if it is still
// far ahead then.
func (r *titleReader) openAhead() {
	if !r.farAhead() {
		return
	}
	if r.n.originRanges.Add(1) > maxOriginRanges {
		r.n.originRanges.Add(-1)
		r.retryAhead()
		r.n.log.Debug("range ahead of the fill not read from the origin: the node has another such read open; it waits for the fill", "title", r.hs.title, "offset", r.off, "retry_in", time.Until(r.aheadNext).Round(time.Millisecond))
		return
	}
	bps := float64(r.hs.meta.Bitrate) / 8
	length := min(max(int64(originAheadMax.Seconds()*bps), originAheadMaxMin), r.hs.meta.Size-r.off)
	a, err := r.n.store.OriginRange(r.ctx, r.hs.t, r.off, length)
	if err != nil {
		r.n.originRanges.Add(-1)
		r.retryAhead()
		r.n.log.Debug("range ahead of the fill not read from the origin: it waits for the fill", "title", r.hs.title, "offset", r.off, "filled", r.hs.t.View().Index.Size, "err", err, "retry_in", time.Until(r.aheadNext).Round(time.Millisecond))
		return
	}
	r.ahead, r.aheadEnd = a, r.off+length
	r.aheadStep = 0
}

// retryAhead sets when the range may ask the origin again (aheadRetry).
func (r *titleReader) retryAhead() {
	if r.aheadStep == 0 {
		r.aheadStep = aheadRetry
	}
	r.aheadNext = time.Now().Add(r.aheadStep/2 + rand.N(r.aheadStep/2+1))
	r.aheadStep = min(2*r.aheadStep, aheadRetryMax)
}

// nextAhead reads the next bytes, at most want, of a range read from the
// origin into aheadBuf and returns how many (fromAhead set), or 0 when
// they are to come from the title's file: the fill has reached r.off (the
// origin's read is closed then), or no read is open (none could be,
// openAhead; or it failed: the range waits for the fill then, and asks
// again later). A read that reached its bound with the fill still far
// behind is followed by the next from there. Errors: the context's.
func (r *titleReader) nextAhead(want int) (int, error) {
	r.fromAhead = false
	if r.ahead != nil {
		if v := r.hs.t.View(); v.Complete || v.Index.Size > r.off || r.off >= r.aheadEnd {
			r.closeAhead() // the fill has it, or the read's bound reached
		}
	}
	if r.ahead == nil && !time.Now().Before(r.aheadNext) {
		r.openAhead()
	}
	if r.ahead == nil {
		return 0, nil
	}
	k := int(min(int64(want), r.aheadEnd-r.off))
	if cap(r.aheadBuf) < k {
		r.aheadBuf = make([]byte, k)
	}
	r.aheadBuf = r.aheadBuf[:k]
	if _, err := io.ReadFull(r.ahead, r.aheadBuf); err != nil {
		r.closeAhead()
		if cerr := r.ctx.Err(); cerr != nil {
			return 0, cerr
		}
		r.retryAhead()
		r.n.log.Info("range ahead of the fill: the origin's read ended (a fill that queued there takes its channel: ABORTED), the range waits for the fill and asks again later", "title", r.hs.title, "offset", r.off, "err", err, "retry_in", time.Until(r.aheadNext).Round(time.Millisecond))
		return 0, nil
	}
	r.fromAhead = true
	return k, nil
}

// closeAhead ends the origin's read of the range, if any.
func (r *titleReader) closeAhead() {
	if r.ahead != nil {
		r.ahead.Close()
		r.ahead = nil
		r.n.originRanges.Add(-1)
	}
	r.fromAhead = false
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
		r.deadline()
		r.advance(k)
		return k, nil
	}
	n, err := r.hs.t.ReadAt(p[:k], r.off)
	if err != nil && n < k {
		if err == io.EOF && n == 0 {
			err = io.ErrUnexpectedEOF // the file shorter than its index
		}
		if err != io.EOF {
			r.n.diskReadError(r.hs.title, r.off+int64(n), err)
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
	if r.off >= r.hs.meta.Size {
		return 0, io.EOF
	}
	if err := r.ctx.Err(); err != nil {
		return 0, err // the session ended, or the client left
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
		// Wait for the fill; far ahead of it, until the origin may be
		// asked again (aheadNext).
		var retry <-chan time.Time
		var tm *time.Timer
		if r.farAhead() {
			tm = time.NewTimer(time.Until(r.aheadNext))
			retry = tm.C
		}
		avail, err := waitBytes(r.ctx, r.hs.t, r.off, retry)
		if tm != nil {
			tm.Stop()
		}
		if err != nil {
			return 0, err
		}
		k = int(min(int64(want), avail-r.off)) // 0 at retry
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
	r.hs.bytes.Add(int64(n))
	r.n.httpBytes.Add(int64(n))
}

// waitBytes waits until title t has bytes past off on disk and returns how
// many it has (the file size once complete), or until wake (nil: never)
// fires: off then. Errors: the fill's once it failed with no bytes past
// off (those before are still served), or ctx's.
func waitBytes(ctx context.Context, t *store.Title, off int64, wake <-chan time.Time) (int64, error) {
	for {
		v := t.View()
		switch {
		case v.Complete:
			return t.Meta().Size, nil
		case v.Index.Size > off:
			return v.Index.Size, nil
		case v.Err != nil:
			return 0, v.Err
		}
		ch := make(chan struct{})
		if !t.Notify(off, func() { close(ch) }) {
			continue
		}
		select {
		case <-ch:
		case <-wake:
			return off, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}
