package cdp

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/cdp/tsindex"
	vodclusterv1 "vodcluster/proto/vodcluster/v1"
)

var errNotStarted = status.Error(codes.Unavailable, "origin not started")

// Fetch streams bytes [offset, offset+length) of a title in chunks of
// ChunkBytes (Origin.Fetch); length 0, or a range running past the end of
// the title, means up to the end. Each chunk carries its offset in the
// title, bytes. The first message, sent once the transfer has a channel
// and has paid SetupDelay, before the title's file is opened, has no data
// and is marked started (offset: the range's): from it on, a node bounds
// the silence of the transfer (its stall watchdog), not before, while the
// transfer may be queued. An empty range (offset at the end) has no
// message. Errors, as gRPC status codes:
//   - INVALID_ARGUMENT: a negative offset or length;
//   - NOT_FOUND: a title id that is not in the catalog, or whose file is
//     gone from its path (withdrawn before its catalog entry): checked
//     before the transfer queues for a channel, so that it is answered at
//     once without taking one, and again when the transfer opens the file;
//   - FAILED_PRECONDITION: if_version is set and is not the title's
//     Version (its file was replaced, and read again by the origin: the
//     caller's bytes are of another);
//   - UNAVAILABLE: if_version is set and the title's file changed since
//     the catalog was loaded (rewritten, touched, or another renamed over
//     it: its bytes are of a version not known until the origin reads its
//     directory again and scans it, which the answer has it do soon,
//     Server.rescanOn), checked before the transfer queues, when it
//     opens the file and after every chunk read (a file written over in
//     place during the transfer ends it before a byte read after the
//     change is sent). Not proof of a new version: the caller retries,
//     naming its version, and is served once the origin has read the file
//     again if its bytes are still that version's (a touch, a copy of the
//     same bytes), or refused FAILED_PRECONDITION if they are not;
//     UNAVAILABLE too when the origin was not started, and when the stat
//     of the title's file it makes before the transfer queues has not
//     returned within StatTimeout (a failing disk, a hung network file
//     system: the caller, which bounds a transfer's silence only from
//     the started message, would otherwise wait with no bound);
//   - OUT_OF_RANGE: an offset past the end of the title (an offset equal to
//     the size is an empty range: no chunk, no transfer);
//   - RESOURCE_EXHAUSTED: every channel is busy and no_wait is set (without
//     no_wait the call queues, first come first served, for a channel);
//   - ABORTED: the transfer was preemptible and gave its channel to a
//     Fetch that queued for one, or a prefetch and gave it to a viewer's
//     read (preempt.go);
//   - CANCELED / DEADLINE_EXCEEDED: the caller's context ended, while
//     queued, during the setup delay or during the transfer;
//   - INTERNAL: the title's file can no longer be read as loaded.
//
// The channel is given back on every exit path, and as soon as the caller
// gives the transfer up (its context ends), even while the transfer is
// still stuck in an open or a read of the title's file.
func (s *Server) Fetch(req *vodclusterv1.FetchRequest, stream grpc.ServerStreamingServer[vodclusterv1.FetchChunk]) error {
	ctx := stream.Context()
	cat := s.Catalog()
	if cat == nil {
		return errNotStarted
	}
	off, length := req.GetOffset(), req.GetLength()
	if off < 0 || length < 0 {
		return status.Errorf(codes.InvalidArgument, "offset %d and length %d must not be negative", off, length)
	}
	if req.GetTitleId() == "" {
		return status.Error(codes.InvalidArgument, "title_id is empty")
	}
	t, ok := cat.Title(req.GetTitleId())
	if !ok {
		return status.Errorf(codes.NotFound, "title %q is not in the origin's catalog", clipID(req.GetTitleId()))
	}
	if v := req.GetIfVersion(); v != "" && v != t.Version {
		return status.Errorf(codes.FailedPrecondition, "title %q is version %s at the origin, not %s", t.ID, t.Version, v)
	}
	if off > t.SizeBytes {
		return status.Errorf(codes.OutOfRange, "offset %d is past the end of title %q (%d bytes)", off, t.ID, t.SizeBytes)
	}
	end := t.SizeBytes
	if length > 0 && length < end-off {
		end = off + length
	}
	if off == end {
		return nil
	}
	// A title whose file is gone is NOT_FOUND at once, before the fetch
	// queues for a channel and pays the setup delay (a file gone after
	// this check is found so once the transfer opens it). A fetch naming
	// a version whose file changed since the catalog's load is answered
	// UNAVAILABLE here too (retry once the origin has read it again), and
	// again, on the file it reads, once it has a channel (the file may
	// change while it waits).
	// The stat is bounded (StatTimeout: UNAVAILABLE, which the caller
	// retries) and, like the transfer's open and reads, watched: one
	// that hangs (a failing disk, a network file system) after the
	// fetch answered, or its caller left, counts in
	// cdp_transfers_abandoned until it returns, though it holds no
	// channel.
	checkFile := req.GetIfVersion() != ""
	st, err, serr := s.statTitle(ctx, t, off, "origin fetch's stat of its title's file before it queued")
	if serr != nil {
		return serr
	}
	if errors.Is(err, fs.ErrNotExist) {
		return errGone(t)
	}
	if checkFile {
		if err := s.rescanOn(t.checkFile(st, err)); err != nil {
			return err
		}
	}

	cls := classFill
	switch {
	case req.GetPreemptible():
		cls = classRead
	case req.GetPrefetch():
		cls = classPrefetch
	}
	var preempt context.CancelCauseFunc
	if cls != classFill {
		ctx, preempt = context.WithCancelCause(ctx)
		defer preempt(nil)
	}
	release, err := s.acquire(ctx, req.GetNoWait(), cls, preempt)
	if err != nil {
		return err
	}
	s.stats.begin(t.ID)
	// The channel goes back when the transfer ends or, sooner, when its
	// caller gives it up: a transfer stuck in a file operation its context
	// cannot interrupt (an open or a read hung on a failing disk or a
	// network file system) would otherwise hold it until that operation
	// returns, and the node's retry (StallAfter after the started message)
	// would queue behind it, as would, once each retry had taken a channel
	// so, every other transfer.
	// A transfer its caller left is counted Abandoned until it returns:
	// one that stays so is stuck in such an operation.
	var once sync.Once
	leave := func() { once.Do(func() { release(); s.stats.end() }) }
	defer leave()
	transferred := s.watchLeft(ctx, t, off, "origin transfer (its channel given back when its caller left)", leave)

	began := time.Now()
	sent, err := s.transfer(ctx, stream, t, off, end, checkFile)
	transferred()
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errPreempted):
		err = status.Error(codes.Aborted, "the origin gave this preemptible transfer's channel to a transfer that needed one")
	case errors.Is(cause, errYielded):
		err = status.Error(codes.Aborted, "the origin gave this prefetch's channel to a viewer's fill or read (ask again: it queues)")
	}
	s.log.Info("origin transfer", "title", t.ID, "offset", off, "bytes", sent,
		"of", end-off, "wall", time.Since(began).Round(time.Millisecond), "err", err)
	return err
}

// transfer pays the setup delay, says the transfer started (a message
// with no data, FetchChunk.started), then sends [off, end) of t paced to
// the transfer rate, after checking, with checkFile, that the file it
// opened is still the one the catalog's load scanned (Title.checkFile). It
// returns the bytes sent.
func (s *Server) transfer(ctx context.Context, stream grpc.ServerStreamingServer[vodclusterv1.FetchChunk], t Title, off, end int64, checkFile bool) (int64, error) {
	if s.SetupDelay > 0 {
		if err := s.clk.Sleep(ctx, s.SetupDelay); err != nil {
			return 0, status.FromContextError(err).Err()
		}
	}
	// Sent before the file is opened: an origin stuck from here on (an
	// open or a read hung on a failing disk or a network file system) is
	// told from one still queueing the transfer.
	if err := stream.Send(&vodclusterv1.FetchChunk{Offset: off, Started: true}); err != nil {
		return 0, err
	}
	f, err := os.Open(t.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, errGone(t)
	}
	if err != nil {
		return 0, status.Errorf(codes.Internal, "title %q: %v", t.ID, err)
	}
	defer f.Close()
	if checkFile {
		if err := s.rescanOn(t.checkFile(f.Stat())); err != nil {
			return 0, err
		}
	}

	var lim *rate.Limiter
	chunk := s.chunk
	if s.TransferRateBps > 0 {
		chunk = chunkAtRate(s.chunk, s.TransferRateBps)
		lim = rate.NewLimiter(rate.Limit(float64(s.TransferRateBps)/8), chunk)
	}
	buf := make([]byte, chunk)
	var sent int64
	for pos := off; pos < end; {
		if err := ctx.Err(); err != nil { // the caller left, or the channel was preempted
			return sent, status.FromContextError(err).Err()
		}
		n := int(min(int64(chunk), end-pos))
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return sent, status.Errorf(codes.Internal, "title %q: reading %d bytes at %d: %v", t.ID, n, pos, err)
		}
		if checkFile {
			// A file written over in place (or touched) since it was
			// opened: the bytes just read may be of another version;
			// none of them is sent (UNAVAILABLE: the caller asks again
			// from here once the origin has read the file again).
			if err := s.rescanOn(t.checkFile(f.Stat())); err != nil {
				return sent, err
			}
		}
		if lim != nil {
			now := s.clk.Now()
			r := lim.ReserveN(now, n) // n <= burst: always OK
			if err := s.clk.Sleep(ctx, r.DelayFrom(now)); err != nil {
				return sent, status.FromContextError(err).Err()
			}
		}
		// SendMsg encodes the message before returning: buf can be reused.
		if err := stream.Send(&vodclusterv1.FetchChunk{Offset: pos, Data: buf[:n]}); err != nil {
			return sent, err
		}
		s.stats.sent(n)
		sent += int64(n)
		pos += int64(n)
	}
	return sent, nil
}

// chunkAtRate returns the chunk size a transfer capped at rateBps bit/s
// sends, bytes: chunk, or less when one chunk takes more than a second at
// that rate (whole 188-byte packets, at least one), so that the gap
// between two chunks stays about a second whatever the cap: a node gives
// up a transfer that sends nothing for its StallAfter (10 s), which a
// 1 MiB chunk at under 0.84 Mbit/s would exceed.
func chunkAtRate(chunk int, rateBps int64) int {
	perSecond := rateBps / 8 / tsindex.PacketSize * tsindex.PacketSize
	return int(max(tsindex.PacketSize, min(int64(chunk), perSecond)))
}
