package deliver

import (
	"errors"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"net"

	"golang.org/x/net/ipv4"
)

// Engine runs the pacers that deliver every Stream. Set the fields, then
// Start; Close stops it. Streams are created with NewStream.
type Engine struct {
	Shards     int           // pacer goroutines; 0 = GOMAXPROCS
	Tick       time.Duration // pacer period; 0 = 5 ms
	Lead       time.Duration // packets are sent this long before they are due; 0 = Tick
	Batch      time.Duration // once a stream has a packet due, it also sends what is due this much later; 0 = 15 ms, <0 = none
	MaxBurst   int           // RTP packets one stream may send per tick (catch-up bound); 0 = 32
	MaxLag     time.Duration // a stream held back this long by its connection is ended (but one whose player stopped reading waits: ConnWriter.ReaderStopped); 0 = 5 s
	SRInterval time.Duration // RTCP sender report period; 0 = 5 s
	UDP        *UDPServer    // ports of the UDP streams; nil = no UDP streams
	Logger     *slog.Logger  // nil = slog.Default()
	// ByeDelay is how long the RTCP BYE at the end of the title, or at
	// the end of the bytes a failed fill left, of a stream over UDP
	// follows its last RTP packet; 0 = 500 ms, <0 = none. RTP and RTCP
	// travel on two sockets, and a player that finds both readable may
	// take the BYE first and drop the packets still queued (ffmpeg's RTP
	// reader polls RTCP before RTP and ends at the BYE: the last audio of
	// every title was lost). Over TCP the BYE follows in the same byte
	// stream and is sent at once.
	ByeDelay time.Duration

	epoch     time.Time
	shards    []*shard
	next      atomic.Uint32
	bytesSent atomic.Int64
	// readerStops counts the streams held back MaxLag that waited for a
	// player that stopped reading instead of ending: ReaderStops.
	readerStops atomic.Int64
	done        chan struct{}
	wg          sync.WaitGroup
	started     bool
}

// ReaderStops returns how many times a stream held back MaxLag by its
// connection found the viewer's player had stopped reading, its host
// alive (ConnWriter.ReaderStopped: paused without a PAUSE), and waited at
// its position rather than ending as a slow client: once per stop, until
// the connection takes its bytes again.
func (e *Engine) ReaderStops() int64 { return e.readerStops.Load() }

// ErrNotStarted is returned by NewStream before Start or after Close.
var ErrNotStarted = errors.New("deliver: engine not running")

// Start starts the pacers.
func (e *Engine) Start() error {
	if e.started {
		return errors.New("deliver: engine already started")
	}
	e.init()
	for _, sh := range e.shards {
		e.wg.Add(1)
		go sh.run()
	}
	return nil
}

// init applies the defaults and makes the shards (without their goroutines).
func (e *Engine) init() {
	if e.Shards <= 0 {
		e.Shards = runtime.GOMAXPROCS(0)
	}
	if e.Tick <= 0 {
		e.Tick = 5 * time.Millisecond
	}
	if e.Lead <= 0 {
		e.Lead = e.Tick
	}
	switch {
	case e.Batch == 0:
		e.Batch = 15 * time.Millisecond
	case e.Batch < 0:
		e.Batch = 0
	}
	if e.MaxBurst <= 0 {
		e.MaxBurst = 32
	}
	if e.MaxLag <= 0 {
		e.MaxLag = 5 * time.Second
	}
	if e.SRInterval <= 0 {
		e.SRInterval = 5 * time.Second
	}
	switch {
	case e.ByeDelay == 0:
		e.ByeDelay = 500 * time.Millisecond
	case e.ByeDelay < 0:
		e.ByeDelay = 0
	}
	if e.Logger == nil {
		e.Logger = slog.Default()
	}
	e.epoch = time.Now()
	e.done = make(chan struct{})
	e.shards = e.shards[:0]
	for range e.Shards {
		e.shards = append(e.shards, newShard(e))
	}
	e.started = true
}

// Close stops the pacers; streams stop where they are (no callbacks).
func (e *Engine) Close() error {
	if !e.started {
		return nil
	}
	close(e.done)
	e.wg.Wait()
	e.started = false
	return nil
}

// BytesSent returns the media and RTCP bytes sent since Start (RTP headers
// and interleaving included, UDP/IP headers not).
func (e *Engine) BytesSent() int64 { return e.bytesSent.Load() }

// now is the engine's monotonic clock, nanoseconds since Start.
func (e *Engine) now() int64 { return int64(time.Since(e.epoch)) }

// shard is one pacer goroutine and the streams it serves.
type shard struct {
	e    *Engine
	wake chan struct{}

	mu      sync.Mutex
	pending []*Stream

	active []*Stream
	// per-wake scratch, reused: file bytes, RTP headers, TCP frames, UDP batch
	arena  []byte
	hdrs   []byte
	out    []byte
	msgs   []ipv4.Message
	owners []*Stream // the stream of each of msgs
	bufs   [][]byte  // iovecs of the queued datagrams
}

const (
	batchMessages = 256
	rtpHeaderSize = 12
	frameOverhead = 4 + rtpHeaderSize // '$', channel, length(2), RTP header
)

func newShard(e *Engine) *shard {
	burst := e.MaxBurst * PayloadSize
	return &shard{
		e:      e,
		wake:   make(chan struct{}, 1),
		arena:  make([]byte, 0, max(burst, batchMessages*PayloadSize)),
		hdrs:   make([]byte, 0, batchMessages*rtpHeaderSize),
		out:    make([]byte, 0, e.MaxBurst*(PayloadSize+frameOverhead)+1024),
		msgs:   make([]ipv4.Message, 0, batchMessages),
		owners: make([]*Stream, 0, batchMessages),
		bufs:   make([][]byte, 0, 2*batchMessages),
	}
}

// add queues st for the next wake.
func (sh *shard) add(st *Stream) {
	sh.mu.Lock()
	sh.pending = append(sh.pending, st)
	sh.mu.Unlock()
	select {
	case sh.wake <- struct{}{}:
	default:
	}
}

func (sh *shard) run() {
	defer sh.e.wg.Done()
	t := time.NewTicker(sh.e.Tick)
	defer t.Stop()
	for {
		sh.collect()
		if len(sh.active) == 0 {
			t.Stop()
			select {
			case <-sh.e.done:
				return
			case <-sh.wake:
			}
			t.Reset(sh.e.Tick)
		} else {
			select {
			case <-sh.e.done:
				return
			case <-t.C:
			}
		}
		sh.step(sh.e.now())
	}
}

// collect moves the streams added since the last wake to the active list.
func (sh *shard) collect() {
	sh.mu.Lock()
	sh.active = append(sh.active, sh.pending...)
	clear(sh.pending)
	sh.pending = sh.pending[:0]
	sh.mu.Unlock()
}

// step sends every active stream what is due at now.
func (sh *shard) step(now int64) {
	keep := sh.active[:0]
	for _, st := range sh.active {
		if st.step(sh, now) {
			keep = append(keep, st)
		}
	}
	clear(sh.active[len(keep):])
	sh.active = keep
	sh.flush()
}

// reserve makes room for nbytes of file data and nmsgs datagrams of at
// most nmsgs RTP packets each (headers and iovecs included) in the
// scratch, flushing the batch when they would not fit; what is taken after
// it stays valid until the next reserve or flush.
func (sh *shard) reserve(nbytes, nmsgs int) {
	if len(sh.arena)+nbytes > cap(sh.arena) || len(sh.msgs)+nmsgs > cap(sh.msgs) ||
		len(sh.bufs)+2*nmsgs > cap(sh.bufs) || len(sh.hdrs)+nmsgs*rtpHeaderSize > cap(sh.hdrs) {
		sh.flush()
	}
}

// arenaTake returns n bytes of scratch (after reserve).
func (sh *shard) arenaTake(n int) []byte {
	l := len(sh.arena)
	sh.arena = sh.arena[:l+n]
	return sh.arena[l : l+n : l+n]
}

// hdrTake returns room for one RTP header (after reserve).
func (sh *shard) hdrTake() []byte {
	l := len(sh.hdrs)
	sh.hdrs = sh.hdrs[:l+rtpHeaderSize]
	return sh.hdrs[l : l+rtpHeaderSize : l+rtpHeaderSize]
}

// iov appends the iovecs of one datagram (or one GSO train of datagrams)
// and returns them (after reserve).
func (sh *shard) iov(parts ...[]byte) [][]byte {
	l := len(sh.bufs)
	sh.bufs = append(sh.bufs, parts...)
	return sh.bufs[l:len(sh.bufs):len(sh.bufs)]
}

// queueUDP adds one datagram made of bufs for dst, of stream st, to the
// batch; oob is a UDP_SEGMENT control message when bufs carry several
// datagrams.
func (sh *shard) queueUDP(st *Stream, bufs [][]byte, oob []byte, dst *net.UDPAddr) {
	sh.msgs = append(sh.msgs, ipv4.Message{Buffers: bufs, OOB: oob, Addr: dst})
	sh.owners = append(sh.owners, st)
}

// flush sends the queued datagrams and frees the scratch. A stream whose
// datagram the kernel refused as too large (tooBig: the route's MTU
// shrank after its SETUP) asks its size again before it sends more.
func (sh *shard) flush() {
	if len(sh.msgs) > 0 && sh.e.UDP != nil {
		if err := sh.e.UDP.writeBatch(sh.msgs, func(i int, err error) {
			if tooBig(err) {
				sh.owners[i].resize.Store(true)
			}
		}); err != nil {
			sh.e.Logger.Debug("udp send", "err", err)
		}
	}
	for i := range sh.msgs {
		sh.msgs[i] = ipv4.Message{}
	}
	clear(sh.owners)
	sh.owners = sh.owners[:0]
	clear(sh.bufs)
	sh.bufs = sh.bufs[:0]
	sh.msgs = sh.msgs[:0]
	sh.arena = sh.arena[:0]
	sh.hdrs = sh.hdrs[:0]
}
