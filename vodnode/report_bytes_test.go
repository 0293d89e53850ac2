package vodnode

import (
	"slices"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestReportCarriesSessionBytes: the load reports of a node count the
// bytes each session has sent so far (session_bytes_sent, one per session
// id): a playing RTSP session's figure is at least what its client has
// read, and no more than its ENDED's count after its TEARDOWN. The
// manager keeps the last figure for the session's record should the
// node die before its ENDED.
func TestReportCarriesSessionBytes(t *testing.T) {
	m, maddr := startFastManager(t)
	n := startNode(t, startOrigin(t, newFakeOrigin(t)), func(n *Node) {
		n.ManagerAddr = maddr
		n.SessionTimeout, n.PauseTimeout = time.Minute, time.Minute
	})
	sid, title := "bytes-1", "sample-001"
	url := nodeURL(n, mint(t, sid, title, "node-1", "", time.Minute), title)
	c := dialRTSP(t, n)
	res := c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	id := sessionID(res)
	if res := c.do("PLAY", url+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("PLAY: %s", statusLine(res))
	}
	read := 0 // bytes the client read: interleaved frames, 4-byte headers included
	c.c.SetReadDeadline(time.Now().Add(15 * time.Second))
	for read < 50_000 {
		_, b, err := c.frame()
		if err != nil {
			t.Fatalf("media after %d bytes: %v", read, err)
		}
		read += 4 + len(b)
	}
	bytesOf := func(r *pb.LoadReport) (uint64, bool) {
		if len(r.GetSessionBytesSent()) != len(r.GetSessionIds()) {
			t.Fatalf("report with %d session_bytes_sent for %d session_ids", len(r.GetSessionBytesSent()), len(r.GetSessionIds()))
		}
		i := slices.Index(r.GetSessionIds(), sid)
		if i < 0 {
			return 0, false
		}
		return r.GetSessionBytesSent()[i], true
	}
	r := m.reportAfter(t, "a load report listing "+sid, func(r *pb.LoadReport) bool { _, ok := bytesOf(r); return ok })
	reported, _ := bytesOf(r)
	if reported < uint64(read) {
		t.Fatalf("report says %s sent %d bytes, want at least the %d its client read", sid, reported, read)
	}
	c.do("TEARDOWN", url+"/", "Session", id)
	var ended *pb.SessionEvent
	waitFor(t, 10*time.Second, "the session's ENDED", func() bool {
		ended = m.event(sid, pb.SessionEvent_KIND_ENDED)
		return ended != nil
	})
	if uint64(ended.GetBytesSent()) < reported {
		t.Fatalf("ENDED says %d bytes, fewer than the %d reported before it", ended.GetBytesSent(), reported)
	}
}
