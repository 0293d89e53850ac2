package vodnode

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

// An RTSP viewer whose title's fill failed a quarter in (the origin away
// longer than fill_retry_for) while its play was PAUSEd plays on once the
// origin is back: its PLAY fills the title again, from the partial the
// failed fill left, and the stream goes on from where it stood to the end
// of the title, every byte the title's. It was bound to the failed fill
// for good: the play ended where the fill had stopped, with an RTCP BYE
// "fill failed", and the session with it.
func TestRTSPSessionRefillsAfterAFailedFill(t *testing.T) {
	t.Parallel() // real-time bound: about 6 s
	o, n, c, url, id, data, cut, got := cutFillRTSP(t, "rtsp-refill", false)
	if got := len(n.store.Partials()); got != 1 {
		t.Fatalf("%d partials after the failed fill, want 1", got)
	}
	o.failAt.Store(0) // the origin is back, whole
	if res := c.do("PLAY", url+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("PLAY once the origin is back: %s", statusLine(res))
	}
	b := got.untilBye(t, c)
	if !bytes.Equal(b, data) {
		t.Fatalf("the play's MP2T: %d bytes, want the title's %d (the fill stopped at %d); equal up to %d",
			len(b), len(data), cut, commonPrefix(b, data))
	}
	if got := len(n.store.Partials()); got != 0 {
		t.Fatalf("%d partials once the title is whole, want 0 (the new fill resumed it)", got)
	}
	teardownReleases(t, n, c, url, id)
}

// An RTSP session's title replaced at the origin, after its fill failed,
// by a file of the same size and bitrate (other bytes: another version)
// is not filled again for it: its PLAY gets the failed fill's 503, not
// the new version's bytes after the old one's.
func TestRTSPSessionDoesNotRefillAnotherVersion(t *testing.T) {
	o, n, c, url, id, data, cut, got := cutFillRTSP(t, "rtsp-refill-other", false)
	other := bytes.Clone(data)
	for p := cut; p+188 <= int64(len(other)); p += 188 {
		other[p+187] ^= 0x55 // the same size and duration, other bytes
	}
	o.replace("short-001", other)
	o.failAt.Store(0)
	// Another fill of the title (the manager's prefetch) has the node
	// read the catalog again: the title there is the new version.
	waitFor(t, 10*time.Second, "the node's catalog to have the new version", func() bool {
		n.store.Prefetch(context.Background(), "short-001")
		m, err := n.store.Lookup(context.Background(), "short-001")
		return err == nil && m.Version == titleVersion(other)
	})
	for i := range 2 {
		if res := c.do("PLAY", url+"/", "Session", id); res.StatusCode != 503 || !bytes.Equal(got.b, data[:len(got.b)]) {
			t.Fatalf("PLAY %d once the origin is back: %s, %d bytes of MP2T equal to the old version's up to %d; want 503 (the session's bytes are the old version's) and no more",
				i+1, statusLine(res), len(got.b), commonPrefix(got.b, data))
		}
	}
}

// An elementary-stream session (/es/: H.264 and AAC tracks) refills as
// an MP2T one does: its PLAY once the origin is back plays on to the
// title's end (its BYE "end of title", not "fill failed"; its position the title's
// duration). It was answered 503 at every PLAY.
func TestRTSPESSessionRefillsAfterAFailedFill(t *testing.T) {
	t.Parallel() // real-time bound: about 6 s
	o, _, c, url, id, _, _, got := cutFillRTSP(t, "rtsp-refill-es", true)
	o.failAt.Store(0)
	if res := c.do("PLAY", url+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("PLAY once the origin is back: %s", statusLine(res))
	}
	got.untilBye(t, c)
	if got.bye != "end of title" {
		t.Fatalf("the play ended with a BYE %q, want the title's end's", got.bye)
	}
	checkPositionAtEnd(t, c, url, id)
}

// checkPositionAtEnd fails t unless session id of url, asked its
// position on c (GET_PARAMETER position), stands within a second of the
// end of short-001 (shortSeconds).
func checkPositionAtEnd(t *testing.T, c *testClient, url, id string) {
	t.Helper()
	res := c.doBody("GET_PARAMETER", url+"/", "position\r\n", "Session", id, "Content-Type", "text/parameters")
	var at float64
	if _, err := fmt.Sscanf(strings.TrimSpace(string(res.Body)), "position: %g", &at); err != nil || at < shortSeconds-1 {
		t.Fatalf("position at the BYE: %s (%v), want about %d s", statusLine(res), err, shortSeconds)
	}
}

// checkRefilledForSession fails t (without stopping it) unless n filled
// short-001 twice, the failed fill and the one it started again for the
// session, and the session is still there at the end of the title (kept
// until its TEARDOWN).
func checkRefilledForSession(t *testing.T, n *Node) {
	t.Helper()
	checkFilledTwice(t, n)
	if s := n.Stats().Sessions; s != 1 {
		t.Errorf("%d sessions at the end of the title, want 1 (kept until TEARDOWN)", s)
	}
}

// checkFilledTwice fails t (without stopping it) unless n filled
// short-001 twice: the failed fill, and the one it started again for the
// session.
func checkFilledTwice(t *testing.T, n *Node) {
	t.Helper()
	if f := n.store.Fills()["short-001"]; f != 2 {
		t.Errorf("%d fills of the title, want 2 (the failed one, and the one for the session)", f)
	}
}

// failingOriginNode starts a node (fill_retry_for retryFor; sessions and
// pauses kept a minute) whose origin sends the first 1/part of short-001
// (cut bytes, whole TS packets) and then fails. It returns the origin
// (o.failAt.Store(0) brings it back, whole), the node, the title's bytes
// and cut.
func failingOriginNode(t *testing.T, part int, retryFor time.Duration) (o *fakeOrigin, n *Node, data []byte, cut int64) {
	t.Helper()
	o = newFakeOrigin(t)
	data = o.titles["short-001"]
	cut = int64(len(data)/part) / 188 * 188
	o.failAt.Store(cut)
	n = startNode(t, startOrigin(t, o), func(n *Node) {
		n.FillRetryFor = retryFor
		n.SessionTimeout, n.PauseTimeout = time.Minute, time.Minute
	})
	return o, n, data, cut
}

// rtspPayloads gathers the MP2T of a play over TCP (the RTP payloads of
// interleaved channel 0, in order).
type rtspPayloads struct {
	b   []byte
	bye string // the reason of the first RTCP BYE read
}

// untilBye reads c's frames until an RTCP BYE and returns the MP2T
// gathered by then.
func (p *rtspPayloads) untilBye(t *testing.T, c *testClient) []byte {
	t.Helper()
	c.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		ch, b, err := c.frame()
		if err != nil {
			t.Fatalf("no BYE after %d bytes of MP2T: %v", len(p.b), err)
		}
		if ch%2 == 1 && hasBye(b) {
			ps, _ := rtcp.Unmarshal(b)
			for _, x := range ps {
				if g, ok := x.(*rtcp.Goodbye); ok {
					p.bye = g.Reason
				}
			}
			return p.b
		}
	}
}

func commonPrefix(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// cutFillRTSP starts a node whose origin sends short-001's first quarter
// (cut bytes) and then fails, and an RTSP session of it over TCP
// (MP2T, or with es its H.264 and AAC tracks) whose play, from the start, is PAUSEd after some packets: it
// returns once the fill has failed for the origin (fill_retry_for
// 300 ms; 2 s for es, whose play is PAUSEd once its reader waits at the
// cut), with the client, the URL, the RTSP session id, the title's
// bytes, and the MP2T the client got (added to as it reads more).
func cutFillRTSP(t *testing.T, sid string, es bool) (o *fakeOrigin, n *Node, c *testClient, url, id string, data []byte, cut int64, got *rtspPayloads) {
	t.Helper()
	retryFor := 300 * time.Millisecond
	if es {
		retryFor = 2 * time.Second // its reader waits at the cut before the PAUSE
	}
	o, n, data, cut = failingOriginNode(t, 4, retryFor)
	got = &rtspPayloads{}
	c = dialRTSP(t, n)
	c.onFrame = func(ch int, b []byte) {
		var pkt rtp.Packet
		if ch == 0 && pkt.Unmarshal(b) == nil {
			got.b = append(got.b, pkt.Payload...)
		}
	}
	tok := mint(t, sid, "short-001", "node-1", "", 10*time.Minute)
	if es {
		url = esURL(n, tok, "short-001")
		id = c.playES(url)
	} else {
		url = nodeURL(n, tok, "short-001")
		id = c.play(url)
	}
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for rtpN := 0; rtpN < 10; {
		ch, _, err := c.frame()
		if err != nil {
			t.Fatalf("after %d RTP packets: %v", rtpN, err)
		}
		if ch == 0 {
			rtpN++
		}
	}
	if es {
		// An elementary-stream play reads the title a second ahead of
		// what it sends: its reader waits at the cut, the fill retrying,
		// before the PAUSE, and meets the failure while paused.
		waitFor(t, 10*time.Second, "the play's reader waiting at the cut", func() bool {
			n.mu.Lock()
			defer n.mu.Unlock()
			s := n.sessions[id]
			return s != nil && s.player != nil && s.player.WaitingForFill()
		})
	}
	if res := c.do("PAUSE", url+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("PAUSE: %s", statusLine(res))
	}
	waitFor(t, 10*time.Second, "the fill to fail", func() bool { return n.store.FillsFailed()["origin"] == 1 })
	waitFor(t, 10*time.Second, "the session's copy to show its fill failed", func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		s := n.sessions[id]
		return s != nil && s.t().View().Err != nil
	})
	if !es && (int64(len(got.b)) >= cut || !bytes.Equal(got.b, data[:len(got.b)])) {
		t.Fatalf("before the PAUSE: %d bytes of MP2T, want the title's first, fewer than the %d the origin sent", len(got.b), cut)
	}
	return o, n, c, url, id, data, cut, got
}

// teardownReleases ends session id of url with a TEARDOWN on c and waits
// for n to release every copy of short-001 it held (the failed ones
// included) and end the session.
func teardownReleases(t *testing.T, n *Node, c *testClient, url, id string) {
	t.Helper()
	if res := c.do("TEARDOWN", url+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("TEARDOWN: %s", statusLine(res))
	}
	waitFor(t, 5*time.Second, "the title's copies released", func() bool {
		for _, st := range n.store.Titles() {
			if st.ID == "short-001" && st.Readers != 0 {
				return false
			}
		}
		return n.Stats().Sessions == 0
	})
}
