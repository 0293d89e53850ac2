package vodnode

import (
	"bytes"
	"testing"
	"time"

	"github.com/pion/rtp"
)

// An RTSP viewer playing a title whose fill failed half-way (the origin
// away longer than fill_retry_for) plays on past the bytes the failed
// fill left once the origin is back, without a PLAY: when its stream
// reaches their end the node fills the title again for the session, and
// the stream goes on from where it stands to the end of the title, every
// byte the title's, in order, its RTP sequence numbers and timestamps
// running on without a jump, and ends with the BYE of the end of the
// title. It was cut off there with an RTCP BYE "fill failed", though the
// origin had come back long before.
func TestRTSPPlayGoesOnPastAFailedFill(t *testing.T) {
	t.Parallel() // real-time bound: about 7 s
	o, n, c, url, id, data, cut, got := playThroughFailedFill(t, "rtsp-refill-playing", 2)
	o.failAt.Store(0) // the origin is back, whole, before the play reaches the cut
	b := got.untilBye(t, c)
	if !bytes.Equal(b, data) {
		t.Fatalf("the play's MP2T: %d bytes, want the title's %d (the fill stopped at %d); equal up to %d; BYE %q",
			len(b), len(data), cut, commonPrefix(b, data), got.bye)
	}
	if got.bye != "end of title" {
		t.Fatalf("the play ended with a BYE %q, want the title's end's", got.bye)
	}
	got.checkTimeline(t)
	checkRefilledForSession(t, n)
	if got := len(n.store.Partials()); got != 0 {
		t.Errorf("%d partials once the title is whole, want 0 (the new fill resumed it)", got)
	}
	teardownReleases(t, n, c, url, id)
}

// An RTSP play that reaches the end of the bytes of a failed fill while
// the origin is still away ends there as before, within seconds: the
// fill started again for it brings nothing within rtspRefillWait, and
// the stream ends with its RTCP BYE "fill failed", the session with it.
func TestRTSPPlayEndsAtAFailedFillWhileTheOriginIsAway(t *testing.T) {
	t.Parallel() // real-time bound: about 5 s
	_, n, c, _, _, data, cut, got := playThroughFailedFill(t, "rtsp-refill-away", 4)
	b := got.untilBye(t, c)
	end := time.Now()
	if !bytes.Equal(b, data[:cut]) {
		t.Fatalf("the play's MP2T: %d bytes, want the %d the failed fill left; equal up to %d", len(b), cut, commonPrefix(b, data))
	}
	if got.bye != "fill failed" {
		t.Fatalf("the play ended with a BYE %q, want \"fill failed\"", got.bye)
	}
	if wait := end.Sub(got.last); wait > rtspRefillWait+3*time.Second {
		t.Errorf("the BYE came %v after the last RTP packet, want within about rtspRefillWait (%v)", wait, rtspRefillWait)
	}
	waitFor(t, 10*time.Second, "the session to end", func() bool { return n.Stats().Sessions == 0 })
}

// playThroughFailedFill starts a node whose origin sends the first
// 1/part of short-001 (cut bytes) and then fails, and an RTSP session of
// it over TCP playing from the start, reading its frames until the fill
// has failed for the origin (fill_retry_for 300 ms), long before the
// play reaches the cut. got gathers the MP2T and the RTP headers as the
// client reads on.
func playThroughFailedFill(t *testing.T, sid string, part int) (o *fakeOrigin, n *Node, c *testClient, url, id string, data []byte, cut int64, got *rtspTimeline) {
	t.Helper()
	o, n, data, cut = failingOriginNode(t, part, 300*time.Millisecond)
	got = &rtspTimeline{}
	c = dialRTSP(t, n)
	c.onFrame = got.gather
	url = nodeURL(n, mint(t, sid, "short-001", "node-1", "", 10*time.Minute), "short-001")
	id = c.play(url)
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for n.store.FillsFailed()["origin"] == 0 {
		if _, _, err := c.frame(); err != nil {
			t.Fatalf("waiting for the fill to fail, %d bytes of MP2T read: %v", len(got.b), err)
		}
	}
	if int64(len(got.b)) >= cut {
		t.Fatalf("the play had %d bytes when the fill failed, at or past the cut (%d)", len(got.b), cut)
	}
	return o, n, c, url, id, data, cut, got
}

// rtspTimeline is rtspPayloads with the RTP headers of the packets read
// and when the last one came.
type rtspTimeline struct {
	rtspPayloads
	hdrs []rtp.Header
	last time.Time
}

// gather is a testClient's onFrame: it adds the MP2T and the header of
// each RTP packet on channel 0 and notes when it came.
func (p *rtspTimeline) gather(ch int, b []byte) {
	var pkt rtp.Packet
	if ch == 0 && pkt.Unmarshal(b) == nil {
		p.b = append(p.b, pkt.Payload...)
		p.hdrs = append(p.hdrs, pkt.Header)
		p.last = time.Now()
	}
}

// checkSeqs fails t unless the packets' RTP sequence numbers follow one
// another: one stream, the refill unseen in it.
func (p *rtspTimeline) checkSeqs(t *testing.T) {
	t.Helper()
	for i := 1; i < len(p.hdrs); i++ {
		if a, b := p.hdrs[i-1], p.hdrs[i]; b.SequenceNumber != a.SequenceNumber+1 {
			t.Fatalf("RTP packet %d: sequence number %d after %d", i, b.SequenceNumber, a.SequenceNumber)
		}
	}
}

// checkTimeline fails t unless the packets' sequence numbers follow one
// another and their timestamps (90 kHz) never go back nor leap ahead by
// half a second: one timeline, the refill unseen in it.
func (p *rtspTimeline) checkTimeline(t *testing.T) {
	t.Helper()
	for i := 1; i < len(p.hdrs); i++ {
		a, b := p.hdrs[i-1], p.hdrs[i]
		if b.SequenceNumber != a.SequenceNumber+1 {
			t.Fatalf("RTP packet %d: sequence number %d after %d", i, b.SequenceNumber, a.SequenceNumber)
		}
		if d := int32(b.Timestamp - a.Timestamp); d < 0 || d > 45000 {
			t.Fatalf("RTP packet %d: timestamp %d after %d (%+d ticks)", i, b.Timestamp, a.Timestamp, d)
		}
	}
}
