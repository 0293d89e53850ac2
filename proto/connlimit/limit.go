package connlimit

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Config is what New needs.
type Config struct {
	// Max is how many connections one client key may hold open at once
	// over the wrapped listeners; <= 0 means no limit (New returns nil).
	Max int
	// Setting is the configuration key of Max, named in the refusal's
	// text and in the log ("max_conns_per_addr").
	Setting string
	// Log takes a line per refusal: at warn at most once every WarnEvery
	// per client key, at debug otherwise. Nil discards them.
	Log *slog.Logger
	// Refused, when set, is called once per connection refused, with its
	// listener's name, before the client sees the answer or the close
	// (for a metric).
	Refused func(listener string)
	// AnswerTimeout bounds the wait for a refused connection's first
	// request, and the write of its answer; 0 means DefaultAnswerTimeout.
	AnswerTimeout time.Duration
	// Linger bounds the read of what the client sends after the answer
	// (read so that the close does not reset the connection and lose the
	// answer); 0 means DefaultLinger.
	Linger time.Duration
}

// Defaults of Config.
const (
	DefaultAnswerTimeout = 2 * time.Second
	DefaultLinger        = time.Second
)

// WarnEvery is how often a client key over the limit is logged at warn
// level (every refusal is logged at debug).
const WarnEvery = time.Minute

// Limiter counts the open connections of each client key (Key) over all
// the listeners it wraps, and refuses one more beyond Config.Max. A nil
// *Limiter is no limit: its Wrap returns the listener, its other methods
// do nothing. Safe for concurrent use.
type Limiter struct {
	c Config

	mu     sync.Mutex
	open   map[netip.Prefix]int
	warned map[netip.Prefix]time.Time // the last warn logged about each key

	answering     chan struct{}             // a token per refused connection being answered (answer.go)
	answers       map[net.Conn]netip.Prefix // the refused connections being answered and their client keys, under mu
	answersBy     map[netip.Prefix]int      // how many of answers each client key has, under mu
	answersClosed bool                      // CloseAnswers was called, under mu
	answersWG     sync.WaitGroup            // the goroutines answering
}

// New returns a limiter of c.Max open connections per client key, or nil
// (no limit) when c.Max <= 0.
func New(c Config) *Limiter {
	if c.Max <= 0 {
		return nil
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.AnswerTimeout <= 0 {
		c.AnswerTimeout = DefaultAnswerTimeout
	}
	if c.Linger <= 0 {
		c.Linger = DefaultLinger
	}
	return &Limiter{c: c, open: map[netip.Prefix]int{}, warned: map[netip.Prefix]time.Time{},
		answering: make(chan struct{}, MaxAnswering), answers: map[net.Conn]netip.Prefix{}, answersBy: map[netip.Prefix]int{}}
}

// Wrap returns ln with each accepted connection counted against its
// client key; name (rtsp, rtsps, http) labels the log and Config.Refused,
// answer says how a connection over the limit is answered (Close on a
// listener TLS wraps: wrap the plain listener, then TLS around it). A
// nil limiter returns ln.
func (l *Limiter) Wrap(ln net.Listener, name string, answer Answer) net.Listener {
	if l == nil {
		return ln
	}
	return &limitedListener{Listener: ln, l: l, name: name, answer: answer}
}

// Key is the client key of a connection's remote address: AddrKey of its
// IP. ok is false for an address that is no TCP address (not counted).
func Key(a net.Addr) (k netip.Prefix, ok bool) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}, false
	}
	return AddrKey(ta.AddrPort().Addr()), true
}

// AddrKey is the client key of an IP address, one per client as an
// operator's network gives them out: the address (an IPv4-mapped one as
// IPv4, a zone dropped) as a /32, or an IPv6 address's /64 (one household
// or subscriber line is given a /64, its devices and privacy addresses
// within it). The zero Prefix for the zero Addr. The manager keys its
// login guard and its same-client checks with it too.
func AddrKey(ip netip.Addr) netip.Prefix {
	if !ip.IsValid() {
		return netip.Prefix{}
	}
	ip = ip.Unmap().WithZone("")
	bits := ip.BitLen()
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// take counts one more connection of k; false when k has Max already.
func (l *Limiter) take(k netip.Prefix) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[k] >= l.c.Max {
		return false
	}
	l.open[k]++
	return true
}

// Open is how many connections of client key k are open; 0 on a nil
// limiter.
func (l *Limiter) Open(k netip.Prefix) int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[k]
}

// release counts one connection of k less.
func (l *Limiter) release(k netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[k]--; l.open[k] <= 0 {
		delete(l.open, k)
	}
}

// refused logs and counts a connection of k refused at accept: at debug
// each time, at warn at most once every WarnEvery per key.
func (l *Limiter) refused(k netip.Prefix, name string, remote net.Addr, now time.Time) {
	if l.c.Refused != nil {
		l.c.Refused(name)
	}
	l.mu.Lock()
	warn := now.Sub(l.warned[k]) >= WarnEvery
	if warn {
		if len(l.warned) >= 4096 { // forget the keys not warned about lately
			for a, t := range l.warned {
				if now.Sub(t) >= WarnEvery {
					delete(l.warned, a)
				}
			}
		}
		l.warned[k] = now
	}
	l.mu.Unlock()
	level := slog.LevelDebug
	if warn {
		level = slog.LevelWarn
	}
	l.c.Log.Log(context.Background(), level, name+": connection refused: its client address has "+l.c.Setting+" open (warned about once a minute per address)",
		"client", remote.String(), l.c.Setting, l.c.Max)
}

// limitedListener is a listener whose connections Limiter counts.
type limitedListener struct {
	net.Listener
	l      *Limiter
	name   string
	answer Answer
}

// Accept returns the next connection whose client key is under the
// limit; one over it is answered 503 and closed by a goroutine of its
// own (answerRefused), or closed at once on a Close listener, with
// MaxAnswering being answered or MaxAnsweringPerKey of its key, and the next
// one awaited.
func (ll *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		k, ok := Key(c.RemoteAddr())
		if !ok {
			return c, nil
		}
		if !ll.l.take(k) {
			ll.l.refused(k, ll.name, c.RemoteAddr(), time.Now()) // counted before the client sees the answer or the close
			if ll.answer == Close || !ll.l.startAnswer(c, k) {
				c.Close()
				continue
			}
			go func() {
				defer ll.l.endAnswer(c)
				ll.l.answerRefused(c, ll.answer)
			}()
			continue
		}
		release := sync.OnceFunc(func() { ll.l.release(k) })
		if tc, ok := c.(*net.TCPConn); ok {
			return &countedTCPConn{TCPConn: tc, release: release}, nil
		}
		return &countedConn{Conn: c, release: release}, nil
	}
}

// countedTCPConn is an accepted TCP connection that frees its key's slot
// when closed (the first Close). It embeds the *net.TCPConn, so that what
// a server does with a TCP connection still works through it: sendfile
// (ReadFrom), SyscallConn (non-blocking writes, SIOCOUTQ), SetWriteBuffer,
// SetLinger, CloseWrite. A type assertion to *net.TCPConn does not; ask
// for the method instead.
type countedTCPConn struct {
	*net.TCPConn
	release func()
}

// Close closes the connection and frees its slot.
func (c *countedTCPConn) Close() error {
	err := c.TCPConn.Close()
	c.release()
	return err
}

// countedConn is an accepted connection of another kind (its address a
// TCP one) that frees its key's slot when closed (the first Close).
type countedConn struct {
	net.Conn
	release func()
}

// Close closes the connection and frees its slot.
func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// CloseWrite shuts down the writing side of the connection when it has
// one; an error otherwise.
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.New("connlimit: the connection has no CloseWrite")
}
