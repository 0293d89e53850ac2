package acm

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/bluenviron/gortsplib/v4/pkg/conn"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// dialFrom opens a TCP connection to addr from the loopback address from.
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// options sends an RTSP OPTIONS on nc and returns the answer's status, or
// the error of a connection the manager closed.
func options(t *testing.T, nc net.Conn, addr string) (base.StatusCode, error) {
	t.Helper()
	u, err := base.ParseURL("rtsp://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	c := conn.NewConn(nc)
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := c.WriteRequest(&base.Request{Method: base.Options, URL: u, Header: base.Header{"CSeq": {"1"}}}); err != nil {
		return 0, err
	}
	res, err := c.ReadResponse()
	if err != nil {
		return 0, err
	}
	return res.StatusCode, nil
}

// One client address may hold MaxConnsPerAddr front-door connections at
// once (RTSP and HTTP together): one more is refused at accept (503) and
// counted, while another address is served; closing one frees a slot.
// One address could open thousands.
func TestFrontDoorConnectionsPerAddress(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.MaxConnsPerAddr = 2 })
	addr := e.m.RTSPAddr()
	refused := func() float64 { return testutil.ToFloat64(connsRefused.WithLabelValues("rtsp")) }
	before := refused()
	first, second := dialFrom(t, "127.0.0.1", addr), dialFrom(t, "127.0.0.1", addr)
	for i, nc := range []net.Conn{first, second} {
		if st, err := options(t, nc, addr); err != nil || st != base.StatusOK {
			t.Fatalf("connection %d: %v %v", i+1, st, err)
		}
	}
	if st, err := options(t, dialFrom(t, "127.0.0.1", addr), addr); err != nil || st != base.StatusServiceUnavailable {
		t.Fatalf("a third connection from 127.0.0.1: %v %v, want 503", st, err)
	}
	if got := refused() - before; got != 1 {
		t.Fatalf("refused connections counted: %v, want 1", got)
	}
	// HTTP counts with RTSP: the address has its two open.
	hc := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}}).DialContext,
		DisableKeepAlives: true}, Timeout: 10 * time.Second}
	if resp, err := hc.Get("http://" + e.m.HTTPAddr() + "/healthz"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("HTTP from 127.0.0.1 over the limit: %v %v, want 503", resp, err)
	} else {
		resp.Body.Close()
	}
	// Another address is served.
	if st, err := options(t, dialFrom(t, "127.0.0.2", addr), addr); err != nil || st != base.StatusOK {
		t.Fatalf("127.0.0.2: %v %v", st, err)
	}
	// A connection closed frees its slot once the manager has seen it
	// close: its reader ends, then its Close releases the address.
	first.Close()
	waitFor(t, 10*time.Second, "the closed connection's slot freed", func() bool {
		return e.m.conns.count(netip.MustParsePrefix("127.0.0.1/32")) == 1
	})
	if st, err := options(t, dialFrom(t, "127.0.0.1", addr), addr); err != nil || st != base.StatusOK {
		t.Fatalf("127.0.0.1 after one of its connections closed: %v %v", st, err)
	}
	if st, err := options(t, second, addr); err != nil || st != base.StatusOK {
		t.Fatalf("the connection kept open: %v %v", st, err)
	}
}

// The limit is off with MaxConnsPerAddr < 0: the listeners are the bare
// ones.
func TestFrontDoorConnectionsUnlimited(t *testing.T) {
	if l := newConnLimiter(-1, testLogger(t)); l != nil {
		t.Fatal("a limiter for -1")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var l *connLimiter
	if l.wrap(ln, "rtsp", refuseRTSP) != ln {
		t.Fatal("no limit, yet the listener wrapped")
	}
}

// Addresses are counted as the login guard keys them: an IPv4-mapped
// address as IPv4, an IPv6 client by its /64.
func TestClientKey(t *testing.T) {
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
		k, ok := clientKey(a)
		if !ok || k != netip.MustParsePrefix(c.want) {
			t.Errorf("%s: %v %v, want %s", c.addr, k, ok, c.want)
		}
	}
	if _, ok := clientKey(&net.UnixAddr{Name: "/x", Net: "unix"}); ok {
		t.Error("a unix address keyed")
	}
}

// An address over the limit is logged at warn at most once a minute, at
// debug otherwise, every time counted.
func TestConnLimiterWarnsOnceAMinute(t *testing.T) {
	var levels []slog.Level
	l := newConnLimiter(1, slog.New(levelRecorder{&levels}))
	k := netip.MustParsePrefix("192.0.2.1/32")
	remote := &net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 4000}
	before := testutil.ToFloat64(connsRefused.WithLabelValues("http"))
	t0 := time.Unix(1_800_000_000, 0)
	for _, at := range []time.Duration{0, 30 * time.Second, 59 * time.Second, 61 * time.Second} {
		l.refused(k, "http", remote, t0.Add(at))
	}
	l.refused(netip.MustParsePrefix("192.0.2.2/32"), "http", remote, t0.Add(62*time.Second))
	want := []slog.Level{slog.LevelWarn, slog.LevelDebug, slog.LevelDebug, slog.LevelWarn, slog.LevelWarn}
	if !slices.Equal(levels, want) {
		t.Fatalf("levels %v, want %v", levels, want)
	}
	if got := testutil.ToFloat64(connsRefused.WithLabelValues("http")) - before; got != 5 {
		t.Fatalf("counted %v, want 5", got)
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
