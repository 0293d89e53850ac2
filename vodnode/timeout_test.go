package vodnode

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
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

// send writes a request without waiting for its response (keepalives of
// tests that drain the connection).
func (tc *testClient) send(method, url string, hdr ...string) {
	tc.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s RTSP/1.0\r\nCSeq: 1000\r\n", method, url)
	for i := 0; i+1 < len(hdr); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", hdr[i], hdr[i+1])
	}
	b.WriteString("\r\n")
	tc.mu.Lock()
	defer tc.mu.Unlock()
	io.WriteString(tc.c, b.String())
}

// TestKeepalivesAndTimeout: every transport's SETUP advertises the
// session timeout; sessions kept alive by GET_PARAMETER, SET_PARAMETER
// (with their Session, at their URL, at "*" or at the node's root, as
// set-top boxes send), OPTIONS (with their Session, or "OPTIONS *" on
// their connection) or RTCP
// receiver reports live on through three timeouts; silent ones (over TCP,
// RTP/UDP and raw UDP) are closed after one; once the keepalives stop, all
// are closed.
func TestKeepalivesAndTimeout(t *testing.T) {
	o := newFakeOrigin(t)
	// Each kept-alive session sends its keepalives every 250 ms from its
	// PLAY on (the set-up of the others, and the node's answers, can take
	// seconds on a loaded machine): a timeout of 2 s leaves them room.
	const timeout = 2 * time.Second
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.SessionTimeout = timeout })
	_, srtcp := n.udp.Ports()
	stop := make(chan struct{})
	var keeping sync.WaitGroup
	serverRTCP := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: srtcp}
	rr, _ := (&rtcp.ReceiverReport{SSRC: 42}).Marshal()
	type viewer struct {
		name  string
		id    string
		keep  func() // nil: silent
		alive bool   // after three timeouts of keepalives
	}
	var vs []*viewer
	for i, tc := range []struct {
		name, transport string // transport: %[1]d the client's RTP port, %[2]d its RTCP port
		keep            string // keepalive method, "RTCP", or "" for none
	}{
		{"tcp GET_PARAMETER", "RTP/AVP/TCP;unicast", "GET_PARAMETER"},
		{"tcp SET_PARAMETER", "MP2T/RTP/TCP;unicast", "SET_PARAMETER"},
		{"tcp OPTIONS", "RTP/AVP/TCP;unicast", "OPTIONS"},
		{"tcp OPTIONS *", "RTP/AVP/TCP;unicast", "OPTIONS *"},
		{"tcp GET_PARAMETER * with Session", "RTP/AVP/TCP;unicast", "GET_PARAMETER *"},
		{"tcp SET_PARAMETER at the node's root with Session", "RTP/AVP/TCP;unicast", "SET_PARAMETER /"},
		{"udp RTCP", "RTP/AVP;unicast;client_port=%[1]d-%[2]d", "RTCP"},
		{"raw udp GET_PARAMETER", "RAW/RAW/UDP;unicast;client_port=%[1]d", "GET_PARAMETER"},
		{"tcp silent", "RTP/AVP/TCP;unicast", ""},
		{"udp silent", "MP2T/RTP/UDP;unicast;client_port=%[1]d-%[2]d", ""},
		{"raw udp silent", "MP2T/UDP;unicast;client_port=%[1]d", ""},
	} {
		c := dialRTSP(t, n)
		url := nodeURL(n, mint(t, fmt.Sprintf("ka-%d", i), "sample-001", "node-1", "", time.Minute), "sample-001")
		rtpc, rtcpc := udpPair(t)
		p := rtpc.LocalAddr().(*net.UDPAddr).Port
		tr := tc.transport
		if strings.Contains(tr, "%") {
			tr = fmt.Sprintf(tr, p, p+1)
		}
		res := c.do("SETUP", url+"/trackID=0", "Transport", tr)
		if res.StatusCode != 200 {
			t.Fatalf("%s: SETUP: %s", tc.name, statusLine(res))
		}
		if v := res.Header["Session"]; len(v) != 1 || !strings.HasSuffix(v[0], ";timeout=2") {
			t.Errorf("%s: Session %v, want the timeout", tc.name, v)
		}
		v := &viewer{name: tc.name, id: sessionID(res), alive: tc.keep != ""}
		if res := c.do("PLAY", url+"/", "Session", v.id); res.StatusCode != 200 {
			t.Fatalf("%s: PLAY: %s", tc.name, statusLine(res))
		}
		go io.Copy(io.Discard, c.br) // media and keepalive answers
		switch tc.keep {
		case "":
		case "RTCP":
			v.keep = func() { rtcpc.WriteTo(rr, serverRTCP) }
		case "OPTIONS *":
			v.keep = func() { c.send("OPTIONS", "*") }
		case "GET_PARAMETER *":
			v.keep = func() { c.send("GET_PARAMETER", "*", "Session", v.id) }
		case "SET_PARAMETER /":
			v.keep = func() { c.send("SET_PARAMETER", "rtsp://"+n.RTSPAddr()+"/", "Session", v.id) }
		default:
			m := tc.keep
			v.keep = func() { c.send(m, url+"/", "Session", v.id) }
		}
		if v.keep != nil {
			keeping.Add(1)
			go func() {
				defer keeping.Done()
				tk := time.NewTicker(250 * time.Millisecond) // the keepalive period
				defer tk.Stop()
				for {
					v.keep()
					select {
					case <-stop:
						return
					case <-tk.C:
					}
				}
			}()
		}
		vs = append(vs, v)
	}
	// the elementary-stream mode advertises it too
	c := dialRTSP(t, n)
	es := esURL(n, mint(t, "ka-es", "sample-001", "node-1", "", time.Minute), "sample-001")
	res := c.do("SETUP", es+"/trackID=1", "Transport", "RTP/AVP/TCP;unicast")
	if v := res.Header["Session"]; res.StatusCode != 200 || len(v) != 1 || !strings.HasSuffix(v[0], ";timeout=2") {
		t.Errorf("ES SETUP: %s, Session %v", statusLine(res), v)
	}
	c.do("TEARDOWN", es+"/", "Session", sessionID(res))

	<-time.After(3 * timeout) // three timeouts of keepalives
	close(stop)
	keeping.Wait()
	for _, v := range vs {
		if alive := n.lookupSession(v.id) != nil; alive != v.alive {
			t.Errorf("%s: alive %v after three timeouts, want %v", v.name, alive, v.alive)
		}
	}
	waitFor(t, 5*time.Second, "every session timed out", func() bool { return n.Stats().Sessions == 0 })
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
	const viewers = 100
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

// TestNoTimeoutWhileWaitingForTheFill: a session whose stream waits for
// its title's fill (here the origin's first byte comes after three
// session timeouts) is not ended for the client's silence: the node has
// sent it nothing to answer. Its media comes once the fill begins.
func TestNoTimeoutWhileWaitingForTheFill(t *testing.T) {
	o := newFakeOrigin(t)
	o.delay = 1500 * time.Millisecond
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.SessionTimeout = 400 * time.Millisecond })
	c := dialRTSP(t, n)
	c.play(nodeURL(n, mint(t, "wait-fill", "sample-001", "node-1", "", time.Minute), "sample-001"))
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := c.frame(); err != nil {
		t.Fatalf("no media after the fill began: %v", err)
	}
}

// TestUDPSetupOnPortsInUse: a set-top box restarted without a TEARDOWN
// sets up a new session to the same client ports: the old session, which
// streamed into the same socket, is ended; the new one plays.
func TestUDPSetupOnPortsInUse(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	rtpc, rtcpc := udpPair(t)
	c1 := dialRTSP(t, n)
	old := c1.setupUDP(nodeURL(n, mint(t, "box-before", "sample-001", "node-1", "", time.Minute), "sample-001"), rtpc, rtcpc)
	c2 := dialRTSP(t, n) // the box's new connection; the old one lingers
	url := nodeURL(n, mint(t, "box-after", "sample-002", "node-1", "", time.Minute), "sample-002")
	id := c2.setupUDP(url, rtpc, rtcpc)
	waitFor(t, 5*time.Second, "the old session ended", func() bool { return n.lookupSession(old) == nil })
	if n.lookupSession(id) == nil {
		t.Fatal("the new session on the same ports ended")
	}
	if res := c2.do("TEARDOWN", url+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("TEARDOWN: %s", statusLine(res))
	}
}

// TestTimeoutEndedAtLastSignOfLife: a session that times out is reported
// ENDED at the client's last sign of life (here its PLAY), not when the
// timeout fired: the session record's end and the watch time the storage
// manager learns are the viewer's.
func TestTimeoutEndedAtLastSignOfLife(t *testing.T) {
	o := newFakeOrigin(t)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	// A session timeout a loaded machine's request round trips stay well
	// within (the session is silent between its SETUP and PLAY).
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.SessionTimeout = time.Second; n.ManagerAddr = maddr })
	c := dialRTSP(t, n)
	c.play(nodeURL(n, mint(t, "gone-silent", "sample-001", "node-1", "", time.Minute), "sample-001"))
	played := time.Now()
	waitFor(t, 10*time.Second, "ENDED", func() bool { return m.event("gone-silent", pb.SessionEvent_KIND_ENDED) != nil })
	e := m.event("gone-silent", pb.SessionEvent_KIND_ENDED)
	if at := time.UnixMilli(e.GetAtUnixMs()); e.GetReason() != "timeout" || at.After(played) || e.GetBytesSent() == 0 {
		t.Fatalf("ENDED %+v at %v, want reason timeout, at the PLAY (by %v), bytes sent", e, at, played)
	}
}

// TestTimedOutSessionClosesItsConnection: a silent client's TCP connection
// closes when its last session times out, not a timeout later at the
// connection's own read deadline (ffmpeg answered 457 to a seek past the
// end sends nothing more and waits for the close: it hung for two
// minutes).
func TestTimedOutSessionClosesItsConnection(t *testing.T) {
	o := newFakeOrigin(t)
	// The connection's own read deadline, renewed while it has a session,
	// would close it 0.75 to 1 timeout after the session ended: it is
	// closed within half a timeout, long enough for the janitor to go
	// from the session's end to its connection on a loaded machine.
	const timeout = 3 * time.Second
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.SessionTimeout = timeout })
	c := dialRTSP(t, n)
	url := nodeURL(n, mint(t, "silent-tcp", "sample-001", "node-1", "", time.Minute), "sample-001")
	res := c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	id := sessionID(res)
	if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=99-"); res.StatusCode != 457 {
		t.Fatalf("PLAY past the end: %s, want 457", statusLine(res))
	}
	waitFor(t, 10*time.Second, "the silent session to time out", func() bool { return n.lookupSession(id) == nil })
	c.c.SetReadDeadline(time.Now().Add(timeout / 2))
	if _, err := c.br.ReadByte(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the connection of the timed-out session: %v, want it closed", err)
	}
}

// TestPausedSessionOutlivesSessionTimeout: a session its client PAUSEd
// lives PauseTimeout without a keepalive (ffplay reads nothing while
// paused, gortsplib's client stops its keepalives), longer than a silent
// playing one: after a silent session set up at the same time has timed
// out, the paused one PLAYs on; it then times out PauseTimeout after
// its last request. (Paused sessions timed out at SessionTimeout: 454 on
// resume after a minute's pause.)
func TestPausedSessionOutlivesSessionTimeout(t *testing.T) {
	o := newFakeOrigin(t)
	// Timeouts a loaded machine's request round trips stay well within:
	// the paused session is silent from its SETUP to its PAUSE.
	const pauseTimeout = 4 * time.Second
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.SessionTimeout, n.PauseTimeout = time.Second, pauseTimeout })
	pc := dialRTSP(t, n)
	pu := nodeURL(n, mint(t, "paused", "sample-001", "node-1", "", time.Minute), "sample-001")
	rtpc, rtcpc := udpPair(t)
	paused := pc.setupUDP(pu, rtpc, rtcpc)
	if res := pc.do("PLAY", pu+"/", "Session", paused); res.StatusCode != 200 {
		t.Fatalf("PLAY: %s", statusLine(res))
	}
	if res := pc.do("PAUSE", pu+"/", "Session", paused); res.StatusCode != 200 {
		t.Fatalf("PAUSE: %s", statusLine(res))
	}
	rtpc2, rtcpc2 := udpPair(t)
	sc := dialRTSP(t, n) // now: a connection without a session closes after SessionTimeout
	silent := sc.setupUDP(nodeURL(n, mint(t, "silent", "sample-001", "node-1", "", time.Minute), "sample-001"), rtpc2, rtcpc2)
	waitFor(t, 10*time.Second, "the silent session to time out", func() bool { return n.lookupSession(silent) == nil })
	if n.lookupSession(paused) == nil {
		t.Fatal("the paused session timed out with the silent one")
	}
	if res := pc.do("PLAY", pu+"/", "Session", paused); res.StatusCode != 200 {
		t.Fatalf("PLAY after the pause: %s, want 200", statusLine(res))
	}
	if res := pc.do("PAUSE", pu+"/", "Session", paused); res.StatusCode != 200 {
		t.Fatalf("PAUSE: %s", statusLine(res))
	}
	last := time.Now()
	waitFor(t, 20*time.Second, "the paused session to time out", func() bool { return n.lookupSession(paused) == nil })
	if took := time.Since(last); took < pauseTimeout {
		t.Errorf("the paused session timed out %v after its last request, want PauseTimeout (%v)", took, pauseTimeout)
	}
}

// TestFailedPlayAfterPauseGetsSessionTimeout: a PLAY answered with an
// error after a PAUSE (ffmpeg seeking past the end: PLAY, PAUSE, PLAY
// Range past the end, 457, silence) leaves the session under
// session_timeout, not pause_timeout (ffmpeg hung five minutes).
func TestFailedPlayAfterPauseGetsSessionTimeout(t *testing.T) {
	o := newFakeOrigin(t)
	// A session timeout a loaded machine's request round trips stay well
	// within (the session is silent from its SETUP to its PAUSE).
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.SessionTimeout, n.PauseTimeout = time.Second, time.Minute })
	c := dialRTSP(t, n)
	url := nodeURL(n, mint(t, "seek-past", "sample-001", "node-1", "", time.Minute), "sample-001")
	id := c.play(url)
	if res := c.do("PAUSE", url+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("PAUSE: %s", statusLine(res))
	}
	waitComplete(t, n, "sample-001")
	if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=99-"); res.StatusCode != 457 {
		t.Fatalf("PLAY past the end: %s, want 457", statusLine(res))
	}
	waitFor(t, 10*time.Second, "the silent session to time out (session_timeout)", func() bool { return n.lookupSession(id) == nil })
}

// TestUDPTimeoutCountsBytesToLastSignOfLife: a UDP viewer gone silent (a
// set-top box killed without a TEARDOWN) is reported ENDED with the bytes
// its stream had sent at its last receiver report, not with what the node
// went on sending to it until the session timed out, as its end is its
// last sign of life.
func TestUDPTimeoutCountsBytesToLastSignOfLife(t *testing.T) {
	o := newFakeOrigin(t)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.SessionTimeout = time.Second; n.ManagerAddr = maddr })
	_, srtcp := n.udp.Ports()
	rtpc, rtcpc := udpPair(t)
	var received atomic.Int64
	go func() {
		buf := make([]byte, 2048)
		for {
			k, err := rtpc.Read(buf)
			if err != nil {
				return
			}
			received.Add(int64(k))
		}
	}()
	c := dialRTSP(t, n)
	c.setupUDP(nodeURL(n, mint(t, "box-killed", "sample-001", "node-1", "", time.Minute), "sample-001"), rtpc, rtcpc)
	waitFor(t, 10*time.Second, "20 kB of media", func() bool { return received.Load() >= 20000 })
	before := received.Load()
	rr, _ := (&rtcp.ReceiverReport{SSRC: 42}).Marshal()
	if _, err := rtcpc.WriteTo(rr, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: srtcp}); err != nil {
		t.Fatal(err)
	}
	// Silent from now on; the node streams on until the timeout.
	waitFor(t, 10*time.Second, "ENDED", func() bool { return m.event("box-killed", pb.SessionEvent_KIND_ENDED) != nil })
	total := received.Load()
	e := m.event("box-killed", pb.SessionEvent_KIND_ENDED)
	if e.GetReason() != "timeout" || e.GetBytesSent() < before || e.GetBytesSent() >= total {
		t.Fatalf("ENDED %+v: want reason timeout and bytes sent at the receiver report, from %d (received before it) to below %d (received by the end)", e, before, total)
	}
}
