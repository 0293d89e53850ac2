package deliver

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	"vodcluster/cdp/tsindex"
)

// WaitAvailable waits until src has bytes past offset off (or is complete,
// or failed) and returns how many bytes are readable. Errors: the fill's
// error once it failed with no bytes past off on disk (those before its
// failure are still read: a viewer plays on to where the fill stopped),
// or ctx's.
func WaitAvailable(ctx context.Context, src Source, off int64) (int64, error) {
	for {
		idx, complete, err := src.State()
		switch {
		case idx.Size > off || (complete && err == nil):
			return idx.Size, nil
		case err != nil:
			return 0, err
		}
		ch := make(chan struct{})
		if !src.Notify(off, func() { close(ch) }) {
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// pacedReader reads a title from an offset as an io.Reader, handing out
// each byte when it is due by the stream clock (and waiting for a fill),
// so that whatever consumes it runs in real time.
type pacedReader struct {
	ctx     context.Context
	src     Source
	off     int64
	prefix  []byte // given first (the PAT and PMT after a jump)
	bitrate int64
	tick    time.Duration
	ahead   time.Duration // bytes are handed out this long before they are due
	waiting *atomic.Bool  // set while it waits for the fill; nil: not told
	// hold, when set, is called before each read: it blocks while the
	// play is paused (PAUSE keeps a play's state) and returns how long
	// the pauses ended since the last call lasted (the pacing moves on by
	// them, so that the reading stays as far ahead of the play as it
	// was), or the context's error.
	hold func(ctx context.Context) (time.Duration, error)
	// idle, when set, is told each time the reader has read all that is
	// due and waits (a tick: fill false, until the wall time it reads
	// again; the fill: fill true, until it goes on), and when a wait for
	// the fill ends (fill false, until now): the play's sender knows so
	// when a stalled reader (a slow disk, a loaded machine) has not read
	// yet what is due (esPlay.readerIdle).
	idle func(until time.Time, fill bool)

	clock int64 // the stream clock at off, 27 MHz ticks (as of the last read of the title)
	// readErr is the error of the read of the title's file that failed,
	// nil if none has. Read then returns io.EOF, there and after,
	// whatever the read's error: a demuxer ends at it, as at the end of
	// the title (mediacommon's returns its input's other errors as they
	// are, but astits takes a file cut short, io.EOF from ReadAt, for
	// the end of its input), and its owner tells the failure from the
	// end of the title by this.
	readErr *ReadError
	// fillErr is the source's error (its fill failed) that Read's io.EOF
	// at the end of the bytes the fill left stands for: its owner tells
	// the end of those bytes from the end of the title by it, not by the
	// source's state later (a PAUSE may hold the play and its end while
	// the session's copy is filled again, the source then failing no
	// more).
	fillErr error
	// refill, when set, is asked (askRefill) whether the source whose
	// fill failed is filled again before Read ends at the end of the
	// bytes the failed fill left (ESConfig.OnFillFailed).
	refill  func() bool
	refused bool // refill answered false: not asked again (a demuxer reads on past io.EOF)

	anchored    bool
	anchorWall  time.Time
	anchorClock int64
}

func (r *pacedReader) Read(p []byte) (int, error) {
	if r.readErr != nil {
		return 0, io.EOF
	}
	if len(r.prefix) > 0 {
		n := copy(p, r.prefix)
		r.prefix = r.prefix[n:]
		return n, nil
	}
	for {
		if r.hold != nil {
			paused, err := r.hold(r.ctx)
			if err != nil {
				return 0, err
			}
			if paused > 0 && r.anchored {
				r.anchorWall = r.anchorWall.Add(paused) // paced on as before the pause
			}
		}
		idx, complete, err := r.src.State()
		if err != nil {
			// The fill failed: the bytes it left are played to their end
			// (as if complete), then io.EOF, so that a demuxer hands out
			// the frames it holds; the reader's owner tells the end of the
			// title from a failure by fillErr.
			if r.off+TSPacketSize > idx.Size {
				// Filled again (askRefill), the read goes on from r.off,
				// waiting for the new fill's bytes.
				if ok, cerr := r.askRefill(); cerr != nil {
					return 0, cerr
				} else if ok {
					continue
				}
				r.fillErr = err
				return 0, io.EOF
			}
			complete = true
		}
		if complete && r.off >= idx.Size {
			r.fillErr = err
			return 0, io.EOF
		}
		if !complete && r.off+TSPacketSize > idx.Size {
			r.anchored = false // the timeline restarts when the fill catches up
			if err := r.waitFill(r.off + TSPacketSize - 1); err != nil && r.ctx.Err() != nil {
				return 0, err
			}
			// More bytes, or the fill failed: the source's state is read
			// again past the hold (a PAUSE holds the reader: the fill's
			// failure met while paused is taken once it ends, and not at
			// all when the session's copy was filled again meanwhile).
			continue
		}
		ck := clockOf{idx: idx}
		if complete {
			ck.bitrate = r.bitrate
		}
		if !ck.ok() {
			if complete {
				return 0, errNoClock
			}
			if err := r.waitFill(idx.Size); err != nil && r.ctx.Err() != nil {
				return 0, err
			}
			continue // as above
		}
		now := time.Now()
		if !r.anchored {
			r.anchorWall, r.anchorClock, r.anchored = now, ck.at(r.off), true
		}
		target := r.anchorClock + int64(now.Add(r.tick+r.ahead).Sub(r.anchorWall))*27/1000
		due := min((ck.offset(target)/TSPacketSize+1)*TSPacketSize, idx.Size)
		if n := min(int64(len(p)), due-r.off); n > 0 {
			m, err := r.src.ReadAt(p[:n], r.off)
			if err != nil {
				// Below the index's size: the file failed, or ends
				// short of its index (io.EOF).
				r.readErr = readError(r.off, err)
				err = io.EOF
			}
			r.off += int64(m)
			r.clock = ck.at(r.off)
			return m, err
		}
		if r.idle != nil {
			r.idle(now.Add(r.tick), false)
		}
		select {
		case <-r.ctx.Done():
			return 0, r.ctx.Err()
		case <-time.After(r.tick):
		}
	}
}

// askRefill asks r.refill, on a goroutine of its own, whether the source
// whose fill failed is filled again, and waits for the answer as for the
// fill (r.waiting set, r.idle told): true when it is (the timeline
// restarts when the new fill's bytes come, as after a wait for the fill),
// false when it is not, or there is none to ask (none set, or it refused
// before: not asked again by this play). Errors: r.ctx's, when
// the play is stopped meanwhile (a Seek or Close, which wait for the
// play's goroutines, not for the answer: its owner's locks may be held
// by them).
func (r *pacedReader) askRefill() (bool, error) {
	if r.refill == nil || r.refused {
		return false, nil
	}
	defer r.markWaiting()()
	r.anchored = false
	ok := make(chan bool, 1)
	refill := r.refill
	go func() { ok <- refill() }()
	select {
	case b := <-ok:
		r.refused = !b
		return b, nil
	case <-r.ctx.Done():
		return false, r.ctx.Err()
	}
}

// markWaiting sets r.waiting and tells r.idle that the play waits (for
// its fill, or for the answer to askRefill); the function it returns
// ends the wait.
func (r *pacedReader) markWaiting() (done func()) {
	if r.waiting != nil {
		r.waiting.Store(true)
	}
	if r.idle != nil {
		r.idle(time.Time{}, true)
	}
	return func() {
		if r.idle != nil {
			r.idle(time.Now(), false)
		}
		if r.waiting != nil {
			r.waiting.Store(false)
		}
	}
}

// waitFill waits until the source has bytes past off (WaitAvailable),
// with r.waiting set meanwhile.
func (r *pacedReader) waitFill(off int64) error {
	defer r.markWaiting()()
	_, err := WaitAvailable(r.ctx, r.src, off)
	return err
}

// keyframeAtOrAfter returns the offset of the first keyframe at or after
// off, or off when there is none.
func keyframeAtOrAfter(idx *tsindex.Index, off int64) int64 {
	for _, k := range idx.Keyframes {
		if k.Offset >= off {
			return k.Offset
		}
	}
	return off
}
