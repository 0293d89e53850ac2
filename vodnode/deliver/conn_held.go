package deliver

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"vodcluster/proto/monotime"
)

// ReaderStopped reports whether the viewer's player has stopped reading
// its connection while its host is alive: a player paused without
// telling the node (mpv sends no RTSP PAUSE: it stops reading the stream
// once its cache is full, and so sends no RTCP report or keepalive
// either). It is true when the socket took none of the queue's bytes for
// at least d and the peer's TCP says why (peerWindowClosed): nothing sent
// is unacknowledged, bytes wait to be sent, and its window probes are
// answered (its receive window is closed, its application reads
// nothing). A slow link still takes bytes now and then, and a host gone
// (power cut, cable pulled) answers no retransmission or probe: neither
// is a stopped reader. True too while a response is being written
// (Write): the stream waits for it, which gives up if the connection
// takes nothing for its timeout (a player resuming sends a keepalive
// first, whose answer waits behind the full queue). False while the
// writer is busy otherwise (readerState says so). For a TLS connection
// (RTSPS), whose writer's goroutine writes whole records, blocking, it
// is true when that goroutine's batch has been in flight for at least d,
// the socket has sent no data for d (tcpi_last_data_sent) and the peer's
// TCP says why (peerWindowClosed); that batch then waits as long as the
// peer holds it back alive (watchBatch). Before, a stopped RTSPS player
// was ended as a slow one. False for a connection without TCP_INFO.
func (w *ConnWriter) ReaderStopped(d time.Duration) bool { return w.readerState(d) == readerGone }

// readerState is what ReaderStopped tells, and readerBusy when the writer
// is busy otherwise (draining its queue, measured): unknown now.
type readerState int

const (
	readerReading readerState = iota // not stopped: a slow link, a host gone, a connection without TCP_INFO
	readerGone                       // stopped reading, its host alive, or a response waits to be written
	readerBusy                       // the writer is busy: ask again
)

func (w *ConnWriter) readerState(d time.Duration) readerState {
	if w.async {
		return w.asyncReaderState(d)
	}
	if w.rc == nil {
		return readerReading
	}
	if !w.mu.TryLock() {
		if w.writing.Load() {
			return readerGone
		}
		return readerBusy
	}
	defer w.mu.Unlock()
	if w.err != nil || len(w.pending) == 0 || monotime.Now()-w.tookAt < int64(d) || !peerWindowClosed(w.rc) {
		return readerReading
	}
	return readerGone
}

// PeerHolding reports whether the viewer's player holds the stream back
// while its host is alive: bytes of the node's wait for it (in the
// queue, or unsent in the socket), none sent is unacknowledged, and it
// answers (no more than one retransmission or window probe in a row
// unanswered): its receive window is closed, its application reads
// nothing (a player paused without a PAUSE: ReaderStopped). A player
// taking the stream, a host gone, or a connection with nothing
// outstanding is not. False as ReaderStopped is, and while the writer
// is busy (for a TLS connection, bytes left unsent in its socket count
// as queued: it waits briefly for the writer's lock instead).
func (w *ConnWriter) PeerHolding() bool {
	if w.async {
		if w.trc == nil {
			return false
		}
		w.mu.Lock() // held only briefly by an async writer's users
		defer w.mu.Unlock()
		// Bytes in the socket unsent (Notsent_bytes), not a batch in
		// flight: one is for every record written, also into a socket
		// with room.
		return w.err == nil && peerHolding(w.trc, false)
	}
	if w.rc == nil || !w.mu.TryLock() {
		return false
	}
	defer w.mu.Unlock()
	return w.err == nil && peerHolding(w.rc, len(w.pending) > 0)
}

// asyncReaderState is readerState for an async writer (TLS): stopped
// when run's batch has been in flight for at least d, its socket has
// sent no data for d and the peer's window is closed, its host
// answering; busy between two batches (the queue taken next).
func (w *ConnWriter) asyncReaderState(d time.Duration) readerState {
	if w.trc == nil {
		return readerReading
	}
	w.mu.Lock() // held only briefly by an async writer's users
	defer w.mu.Unlock()
	switch {
	case w.err != nil:
		return readerReading
	case w.inflight == 0 && len(w.pending) > 0:
		return readerBusy
	case w.inflight == 0 || monotime.Now()-w.batchAt < int64(d):
		return readerReading
	}
	ti, ok := tcpInfo(w.trc)
	if !ok || time.Duration(ti.Last_data_sent)*time.Millisecond < d || !windowClosed(ti) {
		return readerReading
	}
	return readerGone
}

// tcpEstablished is TCP_ESTABLISHED, tcp_info's tcpi_state of an open
// connection (include/net/tcp_states.h).
const tcpEstablished = 1

// tcpInfo returns rc's TCP_INFO (tcp(7)); false when the kernel does not
// give it.
func tcpInfo(rc syscall.RawConn) (*unix.TCPInfo, bool) {
	var ti *unix.TCPInfo
	var err error
	if cerr := rc.Control(func(fd uintptr) { ti, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); cerr != nil || err != nil {
		return nil, false
	}
	return ti, true
}

// answering reports whether ti's peer answers the node: the connection
// is open, and at most one retransmission (tcpi_retransmits) or
// zero-window probe (tcpi_probes) in a row is unanswered. One is allowed:
// a receiver answers at most one segment outside its window per
// tcp_invalid_ratelimit (500 ms), so a probe sent sooner after the last
// one answered goes unanswered (seen on loopback: tcpi_probes 1, then 0
// at the next probe); a host gone answers none, its count growing at
// each.
func answering(ti *unix.TCPInfo) bool {
	return ti.State == tcpEstablished && ti.Retransmits <= 1 && ti.Probes <= 1
}

// windowClosed reports whether ti says the peer's receive window is
// closed by a live peer: it answers (answering), nothing sent is
// unacknowledged (tcpi_unacked 0) and bytes wait unsent
// (tcpi_notsent_bytes): the kernel would send them but for the window.
func windowClosed(ti *unix.TCPInfo) bool {
	return answering(ti) && ti.Unacked == 0 && ti.Notsent_bytes > 0
}

// peerWindowClosed is windowClosed of rc's TCP_INFO.
func peerWindowClosed(rc syscall.RawConn) bool {
	ti, ok := tcpInfo(rc)
	return ok && windowClosed(ti)
}

// peerHolding reports whether rc's peer holds the node's bytes back
// (windowClosed), or, with the caller's queue holding some (queued),
// answers with nothing unacknowledged.
func peerHolding(rc syscall.RawConn, queued bool) bool {
	ti, ok := tcpInfo(rc)
	return ok && answering(ti) && ti.Unacked == 0 && (queued || ti.Notsent_bytes > 0)
}

// probeWithin bounds rc's retransmission timeout, and with it the gap
// between its zero-window probes, to d (TCP_RTO_MAX_MS, Linux 6.15;
// kept within the 1 s to 120 s the kernel takes; nothing where the
// kernel lacks it). The kernel doubles the gap between the probes of a
// window held closed at each one, answered or not, up to 120 s: a player
// paused without a PAUSE for a minute or more was probed a minute or two
// apart, and its host gone then (power cut, cable pulled) was seen to
// answer none (answering: two in a row) only two to four minutes later,
// its session holding its reservation meanwhile (the kernel itself gave
// up after tcp_retries2 probes: half an hour). Bounded by the writer's
// timeout, a host gone is seen within about two timeouts. Data in flight
// is not held to it any sooner than before: a connection that takes
// nothing for the writer's timeout (MaxLag for a stream) is given up
// anyway, long before a retransmission waits that long. TCP_USER_TIMEOUT
// cannot tell a paused player from a host gone: the kernel (seen on
// 6.18) ends a connection whose window stays closed that long even when
// its probes are answered.
func probeWithin(rc syscall.RawConn, d time.Duration) {
	ms := int(min(max(d, time.Second), 120*time.Second) / time.Millisecond)
	rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_RTO_MAX_MS, ms) })
}
