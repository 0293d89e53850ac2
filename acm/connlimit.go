package acm

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// connsRefused counts the front door's connections refused at accept
// because their client address had MaxConnsPerAddr open already.
var connsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "vodcluster_frontdoor_connections_refused_total",
	Help: "Front-door connections refused at accept (answered 503 or closed) because their client address (an IPv6 client's /64) had max_conns_per_addr open already, by listener (rtsp, rtsps, http).",
}, []string{"listener"})

// connWarnEvery is how often a client address over the limit is logged
// at warn level (every refusal is logged at debug).
const connWarnEvery = time.Minute

// connLimiter counts the open front-door connections of each client
// address (an IPv6 client's /64, as the login guard keys them) over all
// the front door's listeners, and refuses one more beyond max: a single
// address opened thousands. golang.org/x/net/netutil.LimitListener
// limits a listener's connections in total, not per address.
type connLimiter struct {
	max int
	log *slog.Logger

	mu     sync.Mutex
	open   map[netip.Prefix]int
	warned map[netip.Prefix]time.Time // the last warn logged about each address

	answering     chan struct{}             // a token per refused connection being answered (connrefuse.go)
	answers       map[net.Conn]netip.Prefix // the refused connections being answered and their client keys, under mu
	answersBy     map[netip.Prefix]int      // how many of answers each client key has, under mu
	answersClosed bool                      // closeAnswers was called, under mu
	answersWG     sync.WaitGroup            // the goroutines answering
}

// newConnLimiter returns a limiter of max open connections per client
// address; max <= 0 is no limit (nil, whose wrap returns the listener).
func newConnLimiter(max int, log *slog.Logger) *connLimiter {
	if max <= 0 {
		return nil
	}
	return &connLimiter{max: max, log: log, open: map[netip.Prefix]int{}, warned: map[netip.Prefix]time.Time{},
		answering: make(chan struct{}, refuseAnswering), answers: map[net.Conn]netip.Prefix{}, answersBy: map[netip.Prefix]int{}}
}

// wrap returns ln with each accepted connection counted against its
// client address; name (rtsp, rtsps, http) labels the log and the metric,
// proto says how a connection over the limit is answered (refuseClose on
// a listener TLS wraps). A nil limiter returns ln.
func (l *connLimiter) wrap(ln net.Listener, name string, proto refuseProto) net.Listener {
	if l == nil {
		return ln
	}
	return &limitedListener{Listener: ln, l: l, name: name, proto: proto}
}

// clientKey is the key of a connection's client address: the address
// (an IPv4-mapped one as IPv4), or an IPv6 address's /64. ok is false
// for an address that is no IP (not counted).
func clientKey(a net.Addr) (netip.Prefix, bool) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}, false
	}
	ip := ta.AddrPort().Addr().Unmap()
	bits := ip.BitLen()
	if ip.Is6() {
		bits = 64
	}
	p, err := ip.Prefix(bits)
	return p, err == nil
}

// take counts one more connection of k; false when k has max already.
func (l *connLimiter) take(k netip.Prefix) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[k] >= l.max {
		return false
	}
	l.open[k]++
	return true
}

// count is how many connections of k are open.
func (l *connLimiter) count(k netip.Prefix) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[k]
}

// release counts one connection of k less.
func (l *connLimiter) release(k netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[k]--; l.open[k] <= 0 {
		delete(l.open, k)
	}
}

// refused logs and counts a connection of k refused at accept: at debug
// each time, at warn at most once every connWarnEvery per address.
func (l *connLimiter) refused(k netip.Prefix, name string, remote net.Addr, now time.Time) {
	connsRefused.WithLabelValues(name).Inc()
	l.mu.Lock()
	warn := now.Sub(l.warned[k]) >= connWarnEvery
	if warn {
		if len(l.warned) >= 4096 { // forget the addresses not warned about lately
			for a, t := range l.warned {
				if now.Sub(t) >= connWarnEvery {
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
	l.log.Log(context.Background(), level, name+": connection refused: its client address has max_conns_per_addr open (warned about once a minute per address)",
		"client", remote.String(), "max_conns_per_addr", l.max)
}

// limitedListener is a front-door listener whose connections connLimiter
// counts.
type limitedListener struct {
	net.Listener
	l     *connLimiter
	name  string
	proto refuseProto
}

// Accept returns the next connection whose client address is under the
// limit; one over it is answered 503 and closed by a goroutine of its
// own (answerRefused), or closed at once on a TLS listener, with
// refuseAnswering being answered or refuseAnsweringPerAddr of its
// address, and the next one awaited.
func (ll *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		k, ok := clientKey(c.RemoteAddr())
		if !ok {
			return c, nil
		}
		if !ll.l.take(k) {
			ll.l.refused(k, ll.name, c.RemoteAddr(), time.Now()) // counted before the client sees the answer or the close
			if ll.proto == refuseClose || !ll.l.startAnswer(c, k) {
				c.Close()
				continue
			}
			go func() {
				defer ll.l.endAnswer(c)
				answerRefused(c, ll.proto, ll.l.max)
			}()
			continue
		}
		return &countedConn{Conn: c, release: sync.OnceFunc(func() { ll.l.release(k) })}, nil
	}
}

// countedConn is an accepted connection that frees its address's slot
// when closed (the first Close).
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

// CloseWrite shuts down the writing side of a TCP connection (the RTSP
// server's lingering close); an error for another kind.
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.New("acm: the connection has no CloseWrite")
}
