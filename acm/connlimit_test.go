package acm

import (
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/bluenviron/gortsplib/v4/pkg/conn"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"vodcluster/proto/connlimit/connlimittest"
)

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
	first, second := connlimittest.DialFrom(t, "127.0.0.1", addr), connlimittest.DialFrom(t, "127.0.0.1", addr)
	for i, nc := range []net.Conn{first, second} {
		if st, err := options(t, nc, addr); err != nil || st != base.StatusOK {
			t.Fatalf("connection %d: %v %v", i+1, st, err)
		}
	}
	if st, err := options(t, connlimittest.DialFrom(t, "127.0.0.1", addr), addr); err != nil || st != base.StatusServiceUnavailable {
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
	if st, err := options(t, connlimittest.DialFrom(t, "127.0.0.2", addr), addr); err != nil || st != base.StatusOK {
		t.Fatalf("127.0.0.2: %v %v", st, err)
	}
	// A connection closed frees its slot once the manager has seen it
	// close: its reader ends, then its Close releases the address.
	first.Close()
	waitFor(t, 10*time.Second, "the closed connection's slot freed", func() bool {
		return e.m.conns.Open(netip.MustParsePrefix("127.0.0.1/32")) == 1
	})
	if st, err := options(t, connlimittest.DialFrom(t, "127.0.0.1", addr), addr); err != nil || st != base.StatusOK {
		t.Fatalf("127.0.0.1 after one of its connections closed: %v %v", st, err)
	}
	if st, err := options(t, second, addr); err != nil || st != base.StatusOK {
		t.Fatalf("the connection kept open: %v %v", st, err)
	}
}

// The limit is off with MaxConnsPerAddr < 0: no limiter, the listeners
// are the bare ones.
func TestFrontDoorConnectionsUnlimited(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.MaxConnsPerAddr = -1 })
	if e.m.conns != nil {
		t.Fatal("a limiter for -1")
	}
	if _, ok := e.m.rtspLn.(*net.TCPListener); !ok {
		t.Fatalf("no limit, yet the RTSP listener wrapped: %T", e.m.rtspLn)
	}
}
