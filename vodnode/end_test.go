package vodnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// hasBye reports whether an RTCP compound packet carries a BYE.
func hasBye(b []byte) bool {
	ps, err := rtcp.Unmarshal(b)
	if err != nil {
		return false
	}
	for _, p := range ps {
		if _, ok := p.(*rtcp.Goodbye); ok {
			return true
		}
	}
	return false
}

// TestEndOfTitleKeepsSession: at the end of the title the node sends an
// RTCP BYE and the session stays, paused at the end, until the client's
// TEARDOWN: PAUSE, keepalives and a PLAY that seeks back all work, and the
// manager hears ENDED (reason teardown) only at the TEARDOWN; its load
// reports list the session meanwhile. Over TCP and UDP.
func TestEndOfTitleKeepsSession(t *testing.T) {
	o := newFakeOrigin(t)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), func(n *Node) {
		n.ManagerAddr = maddr
		n.HeartbeatInterval = 50 * time.Millisecond
	})
	for _, proto := range []string{"tcp", "udp"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			sid := "end-" + proto
			url := nodeURL(n, mint(t, sid, "sample-001", "node-1", "", time.Minute), "sample-001")
			c := dialRTSP(t, n)
			var rtpc, rtcpc *net.UDPConn
			transport := "RTP/AVP/TCP;unicast"
			if proto == "udp" {
				rtpc, rtcpc = udpPair(t)
				p := rtpc.LocalAddr().(*net.UDPAddr).Port
				transport = fmt.Sprintf("RTP/AVP;unicast;client_port=%d-%d", p, p+1)
			}
			res := c.do("SETUP", url+"/trackID=0", "Transport", transport)
			if res.StatusCode != 200 {
				t.Fatalf("SETUP: %s", statusLine(res))
			}
			id := sessionID(res)
			if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=18-"); res.StatusCode != 200 {
				t.Fatalf("PLAY: %s", statusLine(res))
			}
			// media until the BYE
			deadline := time.Now().Add(10 * time.Second)
			buf := make([]byte, 2048)
			for bye := false; !bye; {
				if time.Now().After(deadline) {
					t.Fatal("no RTCP BYE at the end of the title")
				}
				if proto == "tcp" {
					c.c.SetReadDeadline(deadline)
					ch, b, err := c.frame()
					if err != nil {
						t.Fatal(err)
					}
					bye = ch == 1 && hasBye(b)
				} else {
					rtcpc.SetReadDeadline(deadline)
					nb, _, err := rtcpc.ReadFrom(buf)
					if err != nil {
						t.Fatal(err)
					}
					bye = hasBye(buf[:nb])
				}
			}
			byeAt := time.Now()
			for _, m := range []string{"GET_PARAMETER", "PAUSE", "OPTIONS"} {
				if res := c.do(m, url+"/", "Session", id); res.StatusCode != 200 {
					t.Errorf("%s after the end: %s", m, statusLine(res))
				}
			}
			waitFor(t, 5*time.Second, "a load report listing the session after the end", func() bool {
				r := m.lastReport()
				return r != nil && r.GetAtUnixMs() > byeAt.UnixMilli()+100 && slices.Contains(r.GetSessionIds(), sid)
			})
			if proto == "udp" {
				// What was sent before the end and not read yet: left in
				// the socket's buffer, it filled it on a slow machine and
				// the packets after the seek were dropped.
				for range 10_000 {
					rtpc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
					if _, _, err := rtpc.ReadFrom(buf); err != nil {
						break
					}
				}
			}
			// seek back: media again, from the sequence number RTP-Info gives
			res = c.do("PLAY", url+"/", "Session", id, "Range", "npt=15-")
			if res.StatusCode != 200 {
				t.Fatalf("PLAY after the end: %s", statusLine(res))
			}
			next := rtpInfoSeq(t, res.Header["RTP-Info"])
			for got := false; !got; {
				var pkt []byte
				if proto == "tcp" {
					c.c.SetReadDeadline(time.Now().Add(3 * time.Second))
					ch, b, err := c.frame()
					if err != nil {
						t.Fatalf("no media after seeking back: %v", err)
					}
					if ch != 0 {
						continue
					}
					pkt = b
				} else {
					rtpc.SetReadDeadline(time.Now().Add(3 * time.Second))
					nb, _, err := rtpc.ReadFrom(buf)
					if err != nil {
						t.Fatalf("no media after seeking back: %v", err)
					}
					pkt = buf[:nb]
				}
				var p rtp.Packet
				got = p.Unmarshal(pkt) == nil && p.SequenceNumber == next
			}
			if e := m.event(sid, pb.SessionEvent_KIND_ENDED); e != nil {
				t.Fatalf("ENDED reported before TEARDOWN: %+v", e)
			}
			if res := c.do("TEARDOWN", url+"/", "Session", id); res.StatusCode != 200 {
				t.Fatalf("TEARDOWN: %s", statusLine(res))
			}
			waitFor(t, 5*time.Second, "ENDED", func() bool { return m.event(sid, pb.SessionEvent_KIND_ENDED) != nil })
			if e := m.event(sid, pb.SessionEvent_KIND_ENDED); e.GetReason() != "teardown" {
				t.Errorf("ENDED %+v, want reason teardown", e)
			}
		})
	}
}

// TestEndedByManagerSendsBye: a session the node ends on the manager's
// order (EndSessionsCommand) tells its RTSP client with an RTCP BYE
// carrying the reason, so the player stops at once instead of waiting in
// silence for its next keepalive.
func TestEndedByManagerSendsBye(t *testing.T) {
	n := startNode(t, startOrigin(t, newFakeOrigin(t)))
	c := dialRTSP(t, n)
	c.play(nodeURL(n, mint(t, "bye-1", "sample-001", "node-1", "", time.Minute), "sample-001"))
	if _, _, err := c.frame(); err != nil {
		t.Fatalf("first frame: %v", err)
	}
	const reason = "ended by the manager (test)"
	if !n.endAdmission("bye-1", reason) {
		t.Fatal("no live session to end")
	}
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		ch, b, err := c.frame()
		if err != nil {
			t.Fatalf("no RTCP BYE before %v", err)
		}
		if ch != 1 {
			continue
		}
		ps, _ := rtcp.Unmarshal(b)
		if i := slices.IndexFunc(ps, func(p rtcp.Packet) bool { _, ok := p.(*rtcp.Goodbye); return ok }); i >= 0 {
			if got := ps[i].(*rtcp.Goodbye).Reason; got != reason {
				t.Fatalf("BYE reason %q, want %q", got, reason)
			}
			break
		}
	}
	if got := n.Stats().Sessions; got != 0 {
		t.Fatalf("%d sessions after the end", got)
	}
}

// TestEndSessionsRefusesLateViewers: the manager's EndSessions (the
// operator ended a subscriber's sessions) ends the one playing, with an
// RTCP BYE over TCP, and spends the token of the one not yet at the node:
// its viewer, arriving later with its token, is refused (401). The node
// logs the order at warn when it cut a session, at info when it cut none
// (a viewer the manager moved before it arrived): routine, not a fault.
func TestEndSessionsRefusesLateViewers(t *testing.T) {
	o := newFakeOrigin(t)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	var log logtest.Buffer
	n := startNode(t, startOrigin(t, o), withDebugLog(&log), func(n *Node) { n.ManagerAddr = maddr; n.HeartbeatInterval = 50 * time.Millisecond })
	c := dialRTSP(t, n)
	c.play(nodeURL(n, mint(t, "cut-playing", "sample-001", "node-1", "", time.Minute), "sample-001"))
	late := nodeURL(n, mint(t, "cut-late", "sample-002", "node-1", "", time.Minute), "sample-002")
	m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_EndSessions{EndSessions: &pb.EndSessionsCommand{
		SessionIds: []string{"cut-playing", "cut-late"}, Reason: "ended by the operator: account suspended",
		RefuseUntilUnixMs: time.Now().Add(time.Minute).UnixMilli()}}}
	waitFor(t, 5*time.Second, "ENDED of the playing session", func() bool { return m.event("cut-playing", pb.SessionEvent_KIND_ENDED) != nil })
	if e := m.event("cut-playing", pb.SessionEvent_KIND_ENDED); e.GetReason() != "ended by the operator: account suspended" {
		t.Fatalf("ENDED %+v", e)
	}
	if res := dialRTSP(t, n).do("DESCRIBE", late); res.StatusCode != 401 {
		t.Fatalf("the late viewer's DESCRIBE: %s, want 401", statusLine(res))
	}
	waitFor(t, 5*time.Second, "the order's log line", func() bool {
		return strings.Contains(log.String(), `level=WARN msg="sessions ended by the manager" node=node-1 sessions=1 of=2`)
	})
	m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_EndSessions{EndSessions: &pb.EndSessionsCommand{
		SessionIds: []string{"moved-early"}, Reason: "moved: its node sends over TCP only and the SETUP offers only UDP",
		RefuseUntilUnixMs: time.Now().Add(time.Minute).UnixMilli()}}}
	waitFor(t, 5*time.Second, "the second order's log line at info", func() bool {
		return strings.Contains(log.String(), `level=INFO msg="sessions ended by the manager" node=node-1 sessions=0 of=1`)
	})
	if strings.Contains(log.String(), `level=WARN msg="sessions ended by the manager" node=node-1 sessions=0`) {
		t.Errorf("an order that cut no session logged at warn:\n%s", log.String())
	}
}

// TestEndedByManagerCutsHTTPDownload: a progressive HTTP download the node
// ends on the manager's order (the operator ended the session, or the
// manager no longer holds it) stops at once: its one long GET is cut
// before the title's end, not left to stream the whole title on a
// reservation the manager has released.
func TestEndedByManagerCutsHTTPDownload(t *testing.T) {
	o := newFakeOrigin(t)
	// Paced at 1.2 times its bitrate after a 5 s burst: minutes long.
	o.titles["long-001"] = bytes.Repeat(o.titles["sample-001"], 8)
	n := startNode(t, startOrigin(t, o), withHTTP)
	tok := mint(t, "cut-http", "long-001", "node-1", "", time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, httpURL(n, tok, "long-001.ts"), nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET: %s", res.Status)
	}
	if _, err := io.ReadFull(res.Body, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	if !n.endAdmission("cut-http", "ended by the manager (test)") {
		t.Fatal("no live session to end")
	}
	got, err := io.Copy(io.Discard, res.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("the download after its session ended: %d more bytes, %v; want it cut (unexpected EOF)", got, err)
	}
	if got := n.Stats().Sessions; got != 0 {
		t.Fatalf("%d sessions after the end", got)
	}
}

// TestEndedByManagerHTTPEndsAtLastRequest: the ENDED of an HTTP session
// the manager ends (vodctl sessions end) while none of its requests is in
// progress carries the end of its last request, as an idle timeout's
// does: the session record counts the time the viewer was there, not the
// minute it sat idle before the operator's order. One ended in the middle
// of a download ends at the order.
func TestEndedByManagerHTTPEndsAtLastRequest(t *testing.T) {
	o := newFakeOrigin(t)
	o.titles["long-001"] = bytes.Repeat(o.titles["sample-001"], 8)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), withHTTP, func(n *Node) { n.ManagerAddr = maddr })

	idleTok := mint(t, "cut-idle", "sample-002", "node-1", "", time.Minute)
	if res, _ := get(t, httpURL(n, idleTok, "sample-002.ts"), "Range", "bytes=0-187"); res.StatusCode != 206 {
		t.Fatalf("GET: %d", res.StatusCode)
	}
	// Time passes before the order: an ENDED at the order is later than
	// the last request's end. (The node stamps that end once its handler
	// returns, which may be a little after the client has the answer: the
	// ENDED is compared with the order, not with the answer.)
	time.Sleep(200 * time.Millisecond)
	ordered := time.Now()
	if !n.endAdmission("cut-idle", "ended by the operator (test)") {
		t.Fatal("no live session to end")
	}
	waitFor(t, 5*time.Second, "ENDED of the idle session", func() bool { return m.event("cut-idle", pb.SessionEvent_KIND_ENDED) != nil })
	if e := m.event("cut-idle", pb.SessionEvent_KIND_ENDED); e.GetAtUnixMs() >= ordered.UnixMilli() {
		t.Errorf("ENDED of the idle session at %v, want at its last request's end, before the order (%v)", time.UnixMilli(e.GetAtUnixMs()), ordered)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, httpURL(n, mint(t, "cut-busy", "long-001", "node-1", "", time.Minute), "long-001.ts"), nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if _, err := io.ReadFull(res.Body, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	ordered = time.Now()
	if !n.endAdmission("cut-busy", "ended by the operator (test)") {
		t.Fatal("no live download to end")
	}
	waitFor(t, 5*time.Second, "ENDED of the download", func() bool { return m.event("cut-busy", pb.SessionEvent_KIND_ENDED) != nil })
	if at := m.event("cut-busy", pb.SessionEvent_KIND_ENDED).GetAtUnixMs(); at < ordered.UnixMilli() {
		t.Errorf("ENDED of the download at %v, want at the order (%v): it was still being served", time.UnixMilli(at), ordered)
	}
}

// gatedOrigin is a fakeOrigin whose GetTitle (asked before each fill)
// waits, once armed, until the test lets it go: a viewer's setup is held
// in the middle (its token claimed, its bandwidth reserved, the title not
// yet acquired).
type gatedOrigin struct {
	*fakeOrigin
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (o *gatedOrigin) GetTitle(ctx context.Context, _ *pb.GetTitleRequest) (*pb.Title, error) {
	if o.armed.CompareAndSwap(true, false) {
		o.entered <- struct{}{}
		select {
		case <-o.release:
		case <-ctx.Done():
		}
	}
	return nil, status.Error(codes.Unimplemented, "GetTitle (test): use the catalog")
}

// TestEndSessionsDuringSetup: the manager's EndSessions (the operator cut
// the viewer off) arriving while the viewer's RTSP SETUP or first HTTP
// request is being set up refuses that setup (401, token spent) and
// leaves the node's counts as they were: no session set up after its end
// plays on, and the node does not crash on a session without its title.
func TestEndSessionsDuringSetup(t *testing.T) {
	o := &gatedOrigin{fakeOrigin: newFakeOrigin(t), entered: make(chan struct{}), release: make(chan struct{})}
	oaddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterOriginServer(s, o) })
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, oaddr, withHTTP, func(n *Node) { n.ManagerAddr = maddr; n.HeartbeatInterval = 50 * time.Millisecond })
	endDuringSetup := func(t *testing.T, sid string, setup func() int) {
		o.armed.Store(true)
		code := make(chan int, 1)
		go func() { code <- setup() }()
		<-o.entered // the setup holds its claim and its reservation
		n.mgr.command(&pb.NodeCommand{Command: &pb.NodeCommand_EndSessions{EndSessions: &pb.EndSessionsCommand{
			SessionIds: []string{sid}, Reason: "ended by the operator: test", RefuseUntilUnixMs: time.Now().Add(time.Minute).UnixMilli()}}})
		o.release <- struct{}{}
		if got := <-code; got != 401 {
			t.Errorf("the setup the operator ended meanwhile: %d, want 401", got)
		}
		n.mu.Lock()
		reserved, slots := n.reserved, n.slots
		n.mu.Unlock()
		if got := n.Stats().Sessions; got != 0 || reserved != 0 || slots != 0 {
			t.Errorf("after the end: %d sessions, %d bit/s and %d slots reserved; want none", got, reserved, slots)
		}
		waitFor(t, 5*time.Second, "ENDED", func() bool { return m.event(sid, pb.SessionEvent_KIND_ENDED) != nil })
	}
	t.Run("rtsp", func(t *testing.T) {
		url := nodeURL(n, mint(t, "cut-setup-rtsp", "sample-001", "node-1", "", time.Minute), "sample-001")
		c := dialRTSP(t, n)
		endDuringSetup(t, "cut-setup-rtsp", func() int {
			return int(c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast").StatusCode)
		})
	})
	t.Run("http", func(t *testing.T) {
		url := httpURL(n, mint(t, "cut-setup-http", "sample-002", "node-1", "", time.Minute), "sample-002.ts")
		endDuringSetup(t, "cut-setup-http", func() int {
			res, err := http.Get(url)
			if err != nil {
				return 0
			}
			res.Body.Close()
			return res.StatusCode
		})
	})
}
