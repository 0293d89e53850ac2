package deliver

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"vodcluster/proto/monotime"
)

// DefaultQueueLimit is the default bound of a connection's send queue,
// bytes (about 1 s of a 4 Mbit/s title).
const DefaultQueueLimit = 512 << 10

// ConnWriter is the writing side of one RTSP TCP connection, shared by the
// connection's request handler (responses, blocking) and the pacer
// (interleaved media, never blocking). Bytes the socket does not take at
// once are queued, up to a limit; the pacer then holds its media back.
//
// A TLS connection (RTSPS) cannot be written without blocking (crypto/tls
// writes whole records): its ConnWriter queues every write and a goroutine
// of its own writes the queue, so a slow RTSPS viewer holds back only its
// own media, as a slow plain one does. Close stops that goroutine. Its
// TCP socket's TCP_INFO tells a viewer that stopped reading, its host
// alive, from a slow link and a host gone, as for a plain connection
// (ReaderStopped).
type ConnWriter struct {
	c       net.Conn
	rc      syscall.RawConn // nil: the conn has no fd, writes block (or, async, a goroutine writes)
	limit   int
	timeout time.Duration

	mu       sync.Mutex
	pending  []byte
	err      error
	draining bool          // a drainLater is due (armDrainLocked)
	drainGap time.Duration // until the next drainLater: drainRetry, doubled while the socket takes nothing

	// offers wait for the writer's next write (Offer); guarded by cmu,
	// taken under mu (mu, then cmu).
	cmu    sync.Mutex
	offers []*Offer

	// async: a goroutine (run) writes the queue (TLS connections).
	async    bool
	kick     chan struct{} // cap 1: the queue has bytes
	quit     chan struct{} // closed by Close
	inflight int           // bytes run is writing now
	written  uint64        // bytes run has written in all
	queued   uint64        // bytes queued in all
	drained  *sync.Cond    // on mu: run wrote a batch, or failed
	spare    []byte
	stop     sync.Once
	// trc is the TCP socket under the TLS connection, for its TCP_INFO
	// only (writes go through the tls.Conn); nil when it has none.
	trc     syscall.RawConn
	batchAt int64       // when run began the batch in flight (monotime.Now)
	heldAt  int64       // when the peer was last seen holding that batch back, alive (monotime.Now; watchBatch)
	acked   uint64      // tcpi_bytes_acked at watchBatch's last look
	sampled bool        // acked is of the batch in flight (watchBatch looked at it)
	watch   *time.Timer // watchBatch, while a batch is in flight (trc only)

	// tookAt is when the socket last took bytes of a write (monotime.Now; 0:
	// never): ReaderStopped.
	tookAt int64
	// writing is true while Write blocks (a response behind the queue):
	// ReaderStopped.
	writing atomic.Bool

	// non-blocking write state, bound once to avoid a closure per write
	wbuf []byte
	wn   int
	werr error
	nbFn func(uintptr) bool
}

// NewConnWriter returns a writer for c whose queue holds at most limit
// bytes (0 = DefaultQueueLimit) and whose blocking writes give up once
// the connection took nothing for timeout (0 = 10 s; for TLS
// connections likewise, its goroutine's write given up once the
// connection took nothing of it for timeout, its peer not holding it
// back alive: ReaderStopped). Its TCP socket's retransmission timeout is
// bounded by timeout too (probeWithin): a viewer holding its window
// closed is probed at least once a timeout, so that its host gone is
// seen within a few timeouts.
func NewConnWriter(c net.Conn, limit int, timeout time.Duration) *ConnWriter {
	if limit <= 0 {
		limit = DefaultQueueLimit
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	w := &ConnWriter{c: c, limit: limit, timeout: timeout}
	if tc, ok := c.(*tls.Conn); ok {
		w.async, w.kick, w.quit = true, make(chan struct{}, 1), make(chan struct{})
		w.drained = sync.NewCond(&w.mu)
		if sc, ok := tc.NetConn().(syscall.Conn); ok { // a *net.TCPConn, or one wrapped (proto/connlimit)
			if rc, err := sc.SyscallConn(); err == nil {
				w.trc = rc
				probeWithin(rc, timeout)
			}
		}
		go w.run()
		return w
	}
	if sc, ok := c.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			w.rc = rc
			probeWithin(rc, timeout)
		}
	}
	w.nbFn = w.writeSome
	return w
}

// ErrQueueFull is never returned to callers of TryWrite (they get false);
// it is the error a stream ends with when its connection stays full.
var ErrQueueFull = errors.New("deliver: connection send queue full (slow client)")

// Write writes b after whatever is queued (and the offers waiting,
// Offer), blocking until done, until the connection took nothing for
// the timeout, or at most writeHolds timeouts; used for RTSP responses. A response waits behind the
// queue as long as the client takes bytes: a player resuming after it
// stopped reading (ReaderStopped) drains the full queue at its play's
// pace (512 KiB: 14 s of a 300 kbit/s title), and its first keepalive's
// answer, given up 10 s after it was written, failed the connection.
// A failed write fails the writer.
func (w *ConnWriter) Write(b []byte) (int, error) {
	if w.async {
		return w.writeAsync(b)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	w.takeOffersLocked()
	w.writing.Store(true)
	defer w.writing.Store(false)
	defer w.c.SetWriteDeadline(time.Time{})
	start := time.Now()
	if len(w.pending) > 0 {
		n, err := w.writeProgress(w.pending, start)
		if err != nil {
			w.pending = w.pending[:copy(w.pending, w.pending[n:])]
			w.err = err
			return 0, err
		}
		w.pending = w.pending[:0]
	}
	n, err := w.writeProgress(b, start)
	if err != nil {
		w.err = err
	}
	return n, err
}

// writeHolds bounds a blocking write (Write) whose connection keeps
// taking bytes, in timeouts: it holds the writer's lock, which the
// node's session ends wait for (Queued).
const writeHolds = 3

// writeProgress writes b, blocking, until done, until the connection took
// none of it for the timeout, or writeHolds timeouts after start (mu
// held).
func (w *ConnWriter) writeProgress(b []byte, start time.Time) (int, error) {
	done := 0
	for {
		deadline := time.Now().Add(w.timeout)
		if end := start.Add(writeHolds * w.timeout); end.Before(deadline) {
			deadline = end
		}
		w.c.SetWriteDeadline(deadline)
		n, err := w.c.Write(b[done:])
		done += n
		if err == nil || n == 0 || !errors.Is(err, os.ErrDeadlineExceeded) || !time.Now().Before(start.Add(writeHolds*w.timeout)) {
			return done, err
		}
		w.tookAt = monotime.Now() // it took some: wait on
	}
}

// TryWrite writes b without blocking: it returns false, writing nothing
// of b, when the writer is busy (a response is being written) or its
// queue cannot take b; true when b was written or queued whole. The
// offers waiting (Offer) go first, whatever b's fate. An error means the
// connection failed.
func (w *ConnWriter) TryWrite(b []byte) (bool, error) {
	if !w.mu.TryLock() {
		return false, nil
	}
	defer w.mu.Unlock()
	defer w.armDrainLocked()
	if w.err != nil {
		return false, w.err
	}
	w.takeOffersLocked()
	if w.async {
		if w.inflight+len(w.pending)+len(b) > w.limit {
			return false, nil
		}
		w.enqueueLocked(b)
		return true, nil
	}
	if len(w.pending) > 0 {
		if err := w.flushLocked(); err != nil {
			return false, err
		}
		if len(w.pending) > 0 {
			if len(w.pending)+len(b) > w.limit {
				return false, nil
			}
			w.pending = append(w.pending, b...)
			return true, nil
		}
	}
	n, err := w.writeNB(b)
	if err != nil {
		w.err = err
		return false, err
	}
	if n < len(b) {
		w.pending = append(w.pending, b[n:]...)
	}
	return true, nil
}

// Failed reports whether the writer failed (a write's error or timeout,
// or Close): a TLS connection then takes no more records, its close
// alert included (close it with CloseNow).
func (w *ConnWriter) Failed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err != nil
}

// Timeout returns how long a blocking write (Write) waits for the
// connection to take bytes before it gives up and fails the writer.
func (w *ConnWriter) Timeout() time.Duration { return w.timeout }

// Queued returns the bytes waiting in the queue.
func (w *ConnWriter) Queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending) + w.inflight
}

// Close stops the goroutine of a TLS connection's writer (a batch it had
// already taken may still be written; the rest of the queue is not); the
// connection itself is the caller's to close (close it first).
// Writes after Close fail with net.ErrClosed. It does nothing for other
// connections.
func (w *ConnWriter) Close() {
	if !w.async {
		return
	}
	w.stop.Do(func() {
		close(w.quit)
		w.mu.Lock()
		if w.err == nil {
			w.err = net.ErrClosed
		}
		if w.watch != nil {
			w.watch.Stop()
		}
		w.drained.Broadcast()
		w.mu.Unlock()
	})
}

// enqueueLocked queues b for run (mu held).
func (w *ConnWriter) enqueueLocked(b []byte) {
	w.pending = append(w.pending, b...)
	w.queued += uint64(len(b))
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// writeAsync is Write for an async writer: b is queued (whatever the
// limit: a response is never dropped) and Write waits until run has
// written it, failed, or, as a plain connection's Write gives up
// (writeProgress), until the connection took nothing for the timeout
// or at most writeHolds timeouts: a player resuming after it stopped
// reading drains the full queue ahead of its keepalive's answer. Before,
// the answer was given up on a timeout after it was queued, the
// connection closed under a player reading again.
func (w *ConnWriter) writeAsync(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	w.takeOffersLocked()
	w.enqueueLocked(b)
	end := w.queued
	start := time.Now()
	var timer *time.Timer
	check := func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.written < end && w.err == nil {
			now := time.Now()
			took := monotime.Time(max(w.tookAt, monotime.Of(start)))
			if now.Sub(took) < w.timeout && now.Sub(start) < writeHolds*w.timeout {
				timer.Reset(watchEvery(w.timeout))
				return
			}
			w.err = errWriteTimeout
			CloseNow(w.c) // unblocks run's write
		}
		w.drained.Broadcast()
	}
	timer = time.AfterFunc(watchEvery(w.timeout), check) // check waits for mu, held until Wait
	defer timer.Stop()
	for w.written < end && w.err == nil {
		w.drained.Wait()
	}
	if w.written >= end {
		return len(b), nil
	}
	return 0, w.err
}

// errWriteTimeout fails an async writer whose response could not be written
// within its timeout.
var errWriteTimeout = errors.New("deliver: write timed out (client not reading)")

// run writes the queue of an async writer, one batch at a time (what was
// queued while the last was written), until Close or a write fails. A batch
// that the connection takes nothing of for the timeout fails it, but for a
// peer holding it back alive (watchBatch).
func (w *ConnWriter) run() {
	for {
		select {
		case <-w.quit:
			return
		case <-w.kick:
		}
		w.mu.Lock()
		batch := w.pending
		w.pending, w.spare = w.spare[:0], nil
		w.inflight = len(batch)
		if len(batch) > 0 {
			w.startBatchLocked()
		}
		w.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		n, err := w.c.Write(batch)
		w.mu.Lock()
		w.inflight = 0
		w.written += uint64(n)
		if n > 0 {
			w.tookAt = monotime.Now()
		}
		w.spare = batch[:0]
		if err != nil && w.err == nil {
			w.err = err
		}
		failed := w.err != nil
		if !failed && len(w.pending) > 0 {
			select {
			case w.kick <- struct{}{}:
			default:
			}
		}
		w.drained.Broadcast()
		w.mu.Unlock()
		if failed {
			return
		}
	}
}

// watchEvery is how often a batch in flight (watchBatch) and a response
// waiting (writeAsync) are looked at, for a writer's timeout: at most
// 1 s, a quarter of it when that is less.
func watchEvery(timeout time.Duration) time.Duration {
	return min(time.Second, timeout/4)
}

// startBatchLocked gives run's batch its write deadline, the timeout,
// and has watchBatch look at it (mu held).
func (w *ConnWriter) startBatchLocked() {
	now := time.Now()
	w.batchAt, w.sampled = monotime.Of(now), false
	w.c.SetWriteDeadline(now.Add(w.timeout))
	if w.trc == nil {
		return
	}
	if w.watch == nil {
		w.watch = time.AfterFunc(watchEvery(w.timeout), w.watchBatch)
	} else {
		w.watch.Reset(watchEvery(w.timeout))
	}
}

// watchBatch moves the write deadline of run's batch in flight to the
// timeout after the connection last took bytes (tcpi_bytes_acked grew)
// or its peer was last seen holding them back alive (windowClosed: a
// player that stopped reading), and looks again watchEvery later while
// the batch is in flight. A slow link's batch is written on; one that
// no byte of leaves (a host gone answers nothing) fails at its deadline.
// Before, a batch not written whole within the timeout failed the
// connection: a stopped RTSPS player was ended as a slow one. Nothing
// after the writer failed (Close): the deadline stands, and run ends.
func (w *ConnWriter) watchBatch() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inflight == 0 || w.err != nil {
		return
	}
	now := monotime.Now()
	if ti, ok := tcpInfo(w.trc); ok {
		switch {
		case !w.sampled:
			// The batch's first look: what was acknowledged before it
			// (the handshake, the batches before) is no progress of it.
			w.acked, w.sampled = ti.Bytes_acked, true
		case ti.Bytes_acked != w.acked:
			w.acked, w.tookAt = ti.Bytes_acked, now
		}
		if windowClosed(ti) {
			w.heldAt = now
		}
	}
	w.c.SetWriteDeadline(monotime.Time(max(w.batchAt, w.tookAt, w.heldAt)).Add(w.timeout))
	w.watch.Reset(watchEvery(w.timeout))
}

// drainRetry is how soon, and then how often, bytes left in the queue of
// a (plain TCP) writer are written on when nothing else writes them;
// while the socket takes none of them (a client that stopped reading) the
// wait doubles, up to drainRetryMax.
const (
	drainRetry    = 20 * time.Millisecond
	drainRetryMax = 640 * time.Millisecond
)

// armDrainLocked has the queue written on (drainLater) while it holds
// bytes, whoever writes next: the pacer writes it only while a stream
// sends, and the stream that queued the bytes may have ended, paused or
// be waiting for its fill. Before, the end of a title queued behind a
// slow link (up to the queue's limit, and its BYE) stayed there until
// the client's next request, which a player waiting for those bytes
// never sent: it stalled until the session timed out. mu held; nothing
// for an async writer (its goroutine writes the queue).
func (w *ConnWriter) armDrainLocked() {
	if w.async || w.draining || w.err != nil || len(w.pending) == 0 {
		return
	}
	w.draining = true
	if w.drainGap == 0 {
		w.drainGap = drainRetry
	}
	time.AfterFunc(w.drainGap, w.drainLater)
}

// drainLater writes what the socket takes now of the queue, and is due
// again while bytes are left (armDrainLocked): drainRetry later when the
// socket took some, twice the last wait (at most drainRetryMax) when it
// took none. Before, a stalled connection was tried every 20 ms until it
// ended (up to the session timeout after the end of its title): 6% of a
// core for 200 of them.
func (w *ConnWriter) drainLater() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.draining = false
	if w.err != nil || len(w.pending) == 0 {
		return
	}
	before := len(w.pending)
	if w.flushLocked() != nil {
		return
	}
	if len(w.pending) == before {
		w.drainGap = min(2*max(w.drainGap, drainRetry), drainRetryMax)
	}
	w.armDrainLocked()
}

func (w *ConnWriter) flushLocked() error {
	n, err := w.writeNB(w.pending)
	if err != nil {
		w.err = err
		return err
	}
	if n > 0 {
		w.drainGap = drainRetry // the client reads: drain at the first pace
	}
	rest := copy(w.pending, w.pending[n:])
	w.pending = w.pending[:rest]
	return nil
}

// writeNB writes what the socket takes now of b.
func (w *ConnWriter) writeNB(b []byte) (int, error) {
	if w.rc == nil {
		return w.c.Write(b)
	}
	w.wbuf, w.wn, w.werr = b, 0, nil
	if err := w.rc.Write(w.nbFn); err != nil {
		w.wbuf = nil
		return 0, err
	}
	w.wbuf = nil
	if w.wn > 0 {
		w.tookAt = monotime.Now()
	}
	return w.wn, w.werr
}

func (w *ConnWriter) writeSome(fd uintptr) bool {
	for w.wn < len(w.wbuf) {
		n, err := unix.Write(int(fd), w.wbuf[w.wn:])
		if n > 0 {
			w.wn += n
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return true
		case err != nil:
			w.werr = err
			return true
		case n == 0:
			return true
		}
	}
	return true
}

// ResetNow closes c at once as CloseNow does, its socket reset (SO_LINGER
// 0, an RST) rather than closed in order: what it holds unsent or
// unacknowledged is dropped, never delivered after. Its error is Close's.
func ResetNow(c net.Conn) error {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if tc, ok := c.(interface{ SetLinger(int) error }); ok { // a *net.TCPConn, or one wrapped (proto/connlimit)
		tc.SetLinger(0)
	}
	return c.Close()
}

// CloseNow closes c at once: a TLS connection's socket is closed without
// the close-notify alert that tls.Conn.Close writes first (up to 5 s to a
// client that does not read: a slow or stalled viewer, whose connection
// is being given up on). Its error is the socket's.
func CloseNow(c net.Conn) error {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn().Close()
	}
	return c.Close()
}
