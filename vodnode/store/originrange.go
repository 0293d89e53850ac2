package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"vodcluster/proto/durtext"
	pb "vodcluster/proto/vodcluster/v1"
)

// ErrNoOrigin is OriginRange's error on a store without an origin.
var ErrNoOrigin = errors.New("store: no origin")

// OriginRange is a read of a title's bytes straight from the origin, from
// an offset, apart from the title's fill: what a viewer asks for far
// ahead of the fill (a player reading the title's last bytes for its
// duration, or seeking past the part filled) is served now rather than
// when the fill reaches it. The store keeps nothing of it (an RTSP play
// writes its bytes into the title's file itself: Title.WriteAhead). Read returns the
// bytes in file order; Close ends the transfer. Not safe for concurrent
// use, but for Close, which may end a Read in progress from another
// goroutine.
type OriginRange struct {
	s      *Store
	ctx    context.Context
	cancel context.CancelCauseFunc
	stream pb.Origin_FetchClient
	off    int64  // title offset of the next byte Read returns
	buf    []byte // received, not yet read
	// stall ends the transfer with errStalled when the origin's next
	// message is awaited for Config.StallAfter; nil until the transfer
	// started (its first message), as for a fill.
	stall *time.Timer
}

// OriginRange opens a read of length bytes of title t from offset off (0:
// to its end) from the origin, without queueing: it takes one of the origin's
// transfer channels only if one is free now (pb.FetchRequest.no_wait), gives
// it up (the read then fails with ABORTED) to a fill that queues for one
// (preemptible), and reads only t's version (if_version). It returns once the origin has
// started the transfer (its started message or first bytes). From then
// on, as a fill's transfer, the read fails with an error wrapping
// errStalled when the origin sends nothing for Config.StallAfter (an
// origin stuck in a read held the viewer's request, and the node's read,
// until the viewer left). The transfer ends with ctx or Close. Errors:
// ErrNoOrigin on a store without an origin; the origin's
// (RESOURCE_EXHAUSTED: no channel free; FAILED_PRECONDITION: the origin
// holds another version of t).
func (s *Store) OriginRange(ctx context.Context, t *Title, off, length int64) (*OriginRange, error) {
	if s.cfg.Origin == nil {
		return nil, ErrNoOrigin
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stream, err := s.cfg.Origin.Fetch(ctx, &pb.FetchRequest{TitleId: t.meta.ID, Offset: off, Length: length, NoWait: true, Preemptible: true, IfVersion: t.meta.Version})
	if err != nil {
		cancel(nil)
		return nil, err
	}
	r := &OriginRange{s: s, ctx: ctx, cancel: cancel, stream: stream, off: off}
	if err := r.recv(); err != nil && err != io.EOF {
		r.Close()
		return nil, err
	}
	return r, nil
}

// recv receives the origin's next message into buf: io.EOF at the end of
// the transfer; an error wrapping errStalled after Config.StallAfter
// without one once the transfer started.
func (r *OriginRange) recv() error {
	if r.stall != nil {
		r.stall.Reset(r.s.cfg.StallAfter)
	}
	c, err := r.stream.Recv()
	if r.stall != nil {
		r.stall.Stop()
	} else if err == nil {
		r.stall = time.AfterFunc(r.s.cfg.StallAfter, func() { r.cancel(errStalled) })
		r.stall.Stop()
	}
	if err != nil {
		if errors.Is(context.Cause(r.ctx), errStalled) {
			return fmt.Errorf("%w: no chunk for %s after offset %d", errStalled, durtext.Written(r.s.cfg.StallAfter), r.off+int64(len(r.buf)))
		}
		return err
	}
	if len(c.GetData()) == 0 {
		return nil // the transfer's start (started)
	}
	if want := r.off + int64(len(r.buf)); c.GetOffset() != want {
		return fmt.Errorf("origin chunk at offset %d, expected %d", c.GetOffset(), want)
	}
	r.buf = append(r.buf, c.GetData()...)
	r.s.originRangeBytes.Add(int64(len(c.GetData())))
	return nil
}

// Read reads the next bytes of the range: io.EOF at its end,
// the transfer's error otherwise (the origin's, or the context's).
func (r *OriginRange) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if err := r.recv(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	r.off += int64(n)
	return n, nil
}

// Close ends the transfer. It always returns nil.
func (r *OriginRange) Close() error {
	r.cancel(nil) // a stall timer that fires later cancels nothing more
	return nil
}

// OriginRangeBytes returns the bytes received from the origin by
// OriginRange reads since Open (not in OriginBytes, which counts the
// fills'), bytes.
func (s *Store) OriginRangeBytes() int64 { return s.originRangeBytes.Load() }

var _ io.ReadCloser = (*OriginRange)(nil)
