package connlimit

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"vodcluster/proto/connlimit/connlimittest"
)

// serve wraps a loopback listener with l and answers every connection it
// accepts "ok\n", then holds it open until the test ends; it returns the
// address.
func serve(t *testing.T, l *Limiter, answer Answer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wl := l.Wrap(ln, "rtsp", answer)
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := wl.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			io.WriteString(c, "ok\n")
		}
	}()
	t.Cleanup(func() {
		wl.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		l.CloseAnswers()
	})
	return wl.Addr().String()
}

// served reports whether nc was accepted (the server wrote "ok").
func served(t *testing.T, nc net.Conn) bool {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, 3)
	_, err := io.ReadFull(nc, b)
	return err == nil && string(b) == "ok\n"
}

// waitFor polls cond every 10 ms until it holds, failing the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// counter is a Config.Refused that counts.
type counter struct{ n atomic.Int64 }

func (c *counter) refused(string) { c.n.Add(1) }

// Addresses are counted by key: an IPv4-mapped address as IPv4, an IPv6
// client by its /64.
func TestKey(t *testing.T) {
	for _, c := range []struct{ addr, want string }{
		{"127.0.0.1:5000", "127.0.0.1/32"},
		{"[::ffff:192.0.2.7]:5000", "192.0.2.7/32"},
		{"[2001:db8:1:2:aaaa::1]:5000", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:bbbb::9]:6000", "2001:db8:1:2::/64"},
	} {
		a, err := net.ResolveTCPAddr("tcp", c.addr)
		if err != nil {
			t.Fatal(err)
		}
		k, ok := Key(a)
		if !ok || k != netip.MustParsePrefix(c.want) {
			t.Errorf("%s: %v %v, want %s", c.addr, k, ok, c.want)
		}
	}
	if _, ok := Key(&net.UnixAddr{Name: "/x", Net: "unix"}); ok {
		t.Error("a unix address keyed")
	}
	if k := AddrKey(netip.MustParseAddr("fe80::1%eth0")); k != netip.MustParsePrefix("fe80::/64") {
		t.Errorf("zoned address keyed %v", k)
	}
	if k := AddrKey(netip.Addr{}); k.IsValid() {
		t.Errorf("zero address keyed %v", k)
	}
}

// No limit: New returns nil for Max <= 0, whose Wrap returns the
// listener and whose other methods do nothing.
func TestUnlimited(t *testing.T) {
	for _, max := range []int{0, -1} {
		if l := New(Config{Max: max}); l != nil {
			t.Fatalf("a limiter for %d", max)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var l *Limiter
	if l.Wrap(ln, "rtsp", RTSP) != ln {
		t.Fatal("no limit, yet the listener wrapped")
	}
	l.CloseAnswers()
	if l.Open(netip.MustParsePrefix("127.0.0.1/32")) != 0 || l.Answering() != 0 {
		t.Fatal("a nil limiter counts")
	}
}

// One key holds Max connections; one more is refused and counted while
// another address is served; closing one frees its slot.
func TestLimitPerKey(t *testing.T) {
	var refused counter
	l := New(Config{Max: 2, Setting: "max_conns_per_addr", Refused: refused.refused})
	addr := serve(t, l, RTSP)
	first, second := connlimittest.DialFrom(t, "127.0.0.1", addr), connlimittest.DialFrom(t, "127.0.0.1", addr)
	if !served(t, first) || !served(t, second) {
		t.Fatal("the first two connections not served")
	}
	third := connlimittest.DialFrom(t, "127.0.0.1", addr)
	io.WriteString(third, "OPTIONS rtsp://x/ RTSP/1.0\r\nCSeq: 3\r\n\r\n")
	third.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, _ := io.ReadAll(third)
	if !strings.HasPrefix(string(b), "RTSP/1.0 503 Service Unavailable ("+Message+")\r\nCSeq: 3\r\nRetry-After: 5\r\n") ||
		!strings.HasSuffix(string(b), Message+" (2, max_conns_per_addr): close one and try again\n") {
		t.Fatalf("the third connection read %q", b)
	}
	if n := refused.n.Load(); n != 1 {
		t.Fatalf("%d refusals counted, want 1", n)
	}
	if !served(t, connlimittest.DialFrom(t, "127.0.0.2", addr)) {
		t.Fatal("another address not served")
	}
	first.Close() // the server's end stays open: its Close frees the slot
	if n := l.Open(netip.MustParsePrefix("127.0.0.1/32")); n != 2 {
		t.Fatalf("%d open before the server closed its end, want 2", n)
	}
}

// The connection handed to the server is still a TCP connection to what
// a server asks of one (vodnode sends titles with sendfile through
// ReadFrom, writes without blocking through SyscallConn, reads the
// unacknowledged bytes with SIOCOUTQ, resets a slow client with
// SetLinger(0)), and its Close frees its slot once, however often
// called.
func TestCountedConnKeepsTCPMethods(t *testing.T) {
	l := New(Config{Max: 1})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wl := l.Wrap(ln, "http", HTTP)
	defer wl.Close()
	connlimittest.DialFrom(t, "127.0.0.1", wl.Addr().String())
	c, err := wl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(io.ReaderFrom); !ok {
		t.Error("no ReadFrom: no sendfile")
	}
	if _, ok := c.(syscall.Conn); !ok {
		t.Error("no SyscallConn")
	}
	if _, ok := c.(interface{ SetLinger(int) error }); !ok {
		t.Error("no SetLinger")
	}
	if _, ok := c.(interface{ SetWriteBuffer(int) error }); !ok {
		t.Error("no SetWriteBuffer")
	}
	if _, ok := c.(interface{ CloseWrite() error }); !ok {
		t.Error("no CloseWrite")
	}
	k := netip.MustParsePrefix("127.0.0.1/32")
	if l.Open(k) != 1 {
		t.Fatal("not counted")
	}
	c.Close()
	c.Close()
	if n := l.Open(k); n != 0 {
		t.Fatalf("%d open after Close twice, want 0", n)
	}
}

// An address over the limit is logged at warn at most once a minute, at
// debug otherwise, every time counted.
func TestWarnsOnceAMinute(t *testing.T) {
	var levels []slog.Level
	var refused counter
	l := New(Config{Max: 1, Setting: "max_conns_per_addr", Log: slog.New(levelRecorder{&levels}), Refused: refused.refused})
	k := netip.MustParsePrefix("192.0.2.1/32")
	remote := &net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 4000}
	t0 := time.Unix(1_800_000_000, 0)
	for _, at := range []time.Duration{0, 30 * time.Second, 59 * time.Second, 61 * time.Second} {
		l.refused(k, "http", remote, t0.Add(at))
	}
	l.refused(netip.MustParsePrefix("192.0.2.2/32"), "http", remote, t0.Add(62*time.Second))
	want := []slog.Level{slog.LevelWarn, slog.LevelDebug, slog.LevelDebug, slog.LevelWarn, slog.LevelWarn}
	if !slices.Equal(levels, want) {
		t.Fatalf("levels %v, want %v", levels, want)
	}
	if n := refused.n.Load(); n != 5 {
		t.Fatalf("counted %d, want 5", n)
	}
}

// levelRecorder is a slog handler keeping the level of each record.
type levelRecorder struct{ levels *[]slog.Level }

func (r levelRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r levelRecorder) Handle(_ context.Context, rec slog.Record) error {
	*r.levels = append(*r.levels, rec.Level)
	return nil
}
func (r levelRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r levelRecorder) WithGroup(string) slog.Handler      { return r }

// fromAddrs are n loopback addresses from 127.0.0.10 on.
func fromAddrs(n int) []string {
	a := make([]string, n)
	for i := range a {
		a[i] = fmt.Sprintf("127.0.0.%d", 10+i)
	}
	return a
}
