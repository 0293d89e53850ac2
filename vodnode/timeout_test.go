package vodnode

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

func udpPair(t *testing.T) (*net.UDPConn, *net.UDPConn) {
	t.Helper()
	for range 50 {
		a, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		p := a.LocalAddr().(*net.UDPAddr).Port
		b, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p + 1})
		if err != nil {
			a.Close()
			continue
		}
		t.Cleanup(func() { a.Close(); b.Close() })
		return a, b
	}
	t.Fatal("no UDP port pair")
	return nil, nil
}

func (tc *testClient) setupUDP(url string, rtpc, rtcpc *net.UDPConn) string {
	tc.t.Helper()
	p := rtpc.LocalAddr().(*net.UDPAddr).Port
	res := tc.do("SETUP", url+"/trackID=0", "Transport", fmt.Sprintf("RTP/AVP;unicast;client_port=%d-%d", p, p+1))
	if res.StatusCode != 200 {
		tc.t.Fatalf("SETUP: %s", statusLine(res))
	}
	id := sessionID(res)
	if res := tc.do("PLAY", url+"/", "Session", id); res.StatusCode != 200 {
		tc.t.Fatalf("PLAY: %s", statusLine(res))
	}
	return id
}

// TestSessionTimeout: sessions kept alive by RTCP (UDP) or GET_PARAMETER
// (TCP) live on; silent ones are closed after SessionTimeout.
func TestSessionTimeout(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.SessionTimeout = time.Second })
	rtpc, rtcpc := udpPair(t)
	cu := dialRTSP(t, n)
	udpURL := nodeURL(n, mint(t, "u", "sample-001", "node-1", "", time.Minute), "sample-001")
	cu.setupUDP(udpURL, rtpc, rtcpc)
	ct := dialRTSP(t, n)
	tcpURL := nodeURL(n, mint(t, "t", "sample-001", "node-1", "", time.Minute), "sample-001")
	tcpSess := ct.play(tcpURL)
	go io.Copy(io.Discard, ct.br) // drain media and keepalive responses until the connection closes

	_, srtcp := n.udp.Ports()
	rr, _ := (&rtcp.ReceiverReport{SSRC: 42}).Marshal()
	serverRTCP := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: srtcp}
	for range 10 { // 3 s of keepalives, three timeouts long
		rtcpc.WriteTo(rr, serverRTCP)
		ct.mu.Lock()
		fmt.Fprintf(ct.c, "GET_PARAMETER %s/ RTSP/1.0\r\nCSeq: 100\r\nSession: %s\r\n\r\n", tcpURL, tcpSess)
		ct.mu.Unlock()
		time.Sleep(300 * time.Millisecond)
	}
	if s := n.Stats().Sessions; s != 2 {
		t.Fatalf("%d sessions alive with keepalives, want 2", s)
	}
	// silence: both end
	waitFor(t, 5*time.Second, "timeouts", func() bool { return n.Stats().Sessions == 0 })
	// the UDP media stops too
	buf := make([]byte, 2048)
	for {
		rtpc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if _, _, err := rtpc.ReadFrom(buf); err != nil {
			break
		}
	}
}

// TestConnectionCloseEndsTCPSessions: closing the RTSP connection ends the
// sessions interleaved in it at once.
func TestConnectionCloseEndsTCPSessions(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	c := dialRTSP(t, n)
	c.play(nodeURL(n, mint(t, "a", "sample-001", "node-1", "", time.Minute), "sample-001"))
	c.play(nodeURL(n, mint(t, "b", "sample-002", "node-1", "", time.Minute), "sample-002"))
	if s := n.Stats().Sessions; s != 2 {
		t.Fatalf("%d sessions", s)
	}
	c.c.Close()
	waitFor(t, 3*time.Second, "sessions ended", func() bool { return n.Stats().Sessions == 0 })
}

// TestConcurrentUDPSetupsOneAddress: many set-top boxes behind one NAT
// address set up UDP sessions of one title at once; each gets its own
// stream on its own ports (run under -race).
func TestConcurrentUDPSetupsOneAddress(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	const viewers = 40
	var wg sync.WaitGroup
	ssrcs := make([]uint32, viewers)
	errs := make(chan error, viewers)
	for i := range viewers {
		rtpc, rtcpc := udpPair(t)
		c := dialRTSP(t, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			url := nodeURL(n, mint(t, fmt.Sprintf("nat-%d", i), "sample-003", "node-1", "", time.Minute), "sample-003")
			id := c.setupUDP(url, rtpc, rtcpc)
			buf := make([]byte, 2048)
			rtpc.SetReadDeadline(time.Now().Add(5 * time.Second))
			nb, _, err := rtpc.ReadFrom(buf)
			if err != nil {
				errs <- fmt.Errorf("viewer %d: %v", i, err)
				return
			}
			var p rtp.Packet
			if err := p.Unmarshal(buf[:nb]); err != nil || p.PayloadType != 33 {
				errs <- fmt.Errorf("viewer %d: bad packet %v", i, err)
				return
			}
			ssrcs[i] = p.SSRC
			if res := c.do("TEARDOWN", url+"/", "Session", id); res.StatusCode != 200 {
				errs <- fmt.Errorf("viewer %d: TEARDOWN %s", i, statusLine(res))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	seen := map[uint32]bool{}
	for _, s := range ssrcs {
		if seen[s] {
			t.Errorf("SSRC %08x used twice", s)
		}
		seen[s] = true
	}
	if o.fetchCount("sample-003") != 1 {
		t.Errorf("%d fetches", o.fetchCount("sample-003"))
	}
	waitFor(t, 3*time.Second, "all ended", func() bool { return n.Stats().Sessions == 0 })
}

// TestIPTVTransports: set-top box profiles get what they asked for: raw TS
// datagrams (MP2T/UDP, RAW/RAW/UDP) or RTP (MP2T/RTP/UDP), the first known
// entry of the list winning.
func TestIPTVTransports(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	for i, tc := range []struct {
		transport string // %d = client port
		raw       bool
		profile   string
	}{
		{"X-FOO/BAR;unicast,RAW/RAW/UDP;unicast;destination=127.0.0.1;client_port=%d", true, "RAW/RAW/UDP"},
		{"MP2T/UDP;unicast;client_port=%d", true, "MP2T/UDP"},
		{"MP2T/RTP/UDP;unicast;client_port=%d-%d", false, "MP2T/RTP/UDP"},
	} {
		rtpc, _ := udpPair(t)
		p := rtpc.LocalAddr().(*net.UDPAddr).Port
		c := dialRTSP(t, n)
		url := nodeURL(n, mint(t, fmt.Sprintf("iptv-%d", i), "sample-001", "node-1", "", time.Minute), "sample-001")
		tr := fmt.Sprintf(tc.transport, p, p+1)
		if strings.Count(tc.transport, "%d") == 1 {
			tr = fmt.Sprintf(tc.transport, p)
		}
		res := c.do("SETUP", url+"/trackID=0", "Transport", tr)
		if res.StatusCode != 200 {
			t.Fatalf("%s: %s", tc.profile, statusLine(res))
		}
		if got := res.Header["Transport"][0]; !strings.HasPrefix(got, tc.profile+";unicast") {
			t.Errorf("%s: response Transport %q", tc.profile, got)
		}
		id := sessionID(res)
		res = c.do("PLAY", url+"/", "Session", id)
		if res.StatusCode != 200 {
			t.Fatalf("PLAY: %s", statusLine(res))
		}
		if _, ok := res.Header["RTP-Info"]; ok == tc.raw {
			t.Errorf("%s: RTP-Info present %v", tc.profile, ok)
		}
		buf := make([]byte, 2048)
		for range 20 {
			rtpc.SetReadDeadline(time.Now().Add(3 * time.Second))
			nb, _, err := rtpc.ReadFrom(buf)
			if err != nil {
				t.Fatalf("%s: %v", tc.profile, err)
			}
			d := buf[:nb]
			if !tc.raw {
				var pk rtp.Packet
				if err := pk.Unmarshal(d); err != nil || pk.PayloadType != 33 {
					t.Fatalf("%s: not RTP/MP2T: %v", tc.profile, err)
				}
				d = pk.Payload
			}
			if len(d)%188 != 0 || len(d) > 1316 || d[0] != 0x47 {
				t.Fatalf("%s: datagram of %d bytes starting %#x", tc.profile, len(d), d[0])
			}
		}
		c.do("TEARDOWN", url+"/", "Session", id)
	}
}
