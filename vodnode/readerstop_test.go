package vodnode

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestTCPPlayerPausedWithoutPAUSE: a player over TCP that stops reading
// without a PAUSE and without a word (mpv paused: it reads nothing once
// its cache is full, so it sends no RTCP report and no keepalive either),
// its host alive, keeps its session: its stream waits at the position
// (ReaderStops) past the slow-client lag and the session timeout, and
// when it reads again the title goes on from there, no byte lost or
// skipped. (Its stream was ended as a slow client, or its session timed
// out a minute after its last keepalive: mpv, resumed, played what its
// cache held and ended "End of file" a few seconds into the title.)
//
// Its TEARDOWN after reports paused_ms (the session record's paused_s):
// at least the time from when the node was seen waiting to when the
// player read again, at most the session's whole length.
func TestTCPPlayerPausedWithoutPAUSE(t *testing.T) {
	start := time.Now()
	n, m, c, _, url, sess := tcpPlayerAt20k(t, "box-paused", pausedWithoutPAUSETimes)
	waiting, resumed := playerPausedWithoutPAUSE(t, n, m, c, url, sess)
	if res := c.do("TEARDOWN", url+"/", "Session", sess); res.StatusCode != 200 {
		t.Fatalf("TEARDOWN: %s", statusLine(res))
	}
	var e *pb.SessionEvent
	waitFor(t, 10*time.Second, "the session's ENDED", func() bool {
		e = m.event("box-paused", pb.SessionEvent_KIND_ENDED)
		return e != nil
	})
	least, most := resumed.Sub(waiting), time.Since(start)
	if p := time.Duration(e.GetPausedMs()) * time.Millisecond; p < least-time.Millisecond || p > most {
		t.Errorf("ENDED paused_ms %d, want from %d (seen waiting to read again) to %d (the whole session)", e.GetPausedMs(), least.Milliseconds(), most.Milliseconds())
	}
}

// pausedWithoutPAUSETimes are the node's times for
// playerPausedWithoutPAUSE: a 2 s session timeout, a minute's pause
// timeout, a 300 ms slow-client lag.
func pausedWithoutPAUSETimes(n *Node) {
	n.SessionTimeout, n.PauseTimeout, n.maxLag = 2*time.Second, time.Minute, 300*time.Millisecond
}

// playerPausedWithoutPAUSE is TestTCPPlayerPausedWithoutPAUSE from
// where its player (c, its session "box-paused" playing url) has read
// 20 kB of the title and stops reading. It returns when its stream was
// seen waiting for the player and when the player read again.
func playerPausedWithoutPAUSE(t *testing.T, n *Node, m *fakeManager, c *testClient, url, sess string) (waiting, resumed time.Time) {
	var payload []byte // the RTP payloads in order: the title's bytes
	collect := func(ch int, b []byte) {
		if ch == 0 && len(b) > 12 {
			payload = append(payload, b[12:]...)
		}
	}
	// The frames read so far: as tcpPlayerAt20k read them, from the
	// title's start. Read the rest of the frame in progress on.
	c.onFrame = collect
	// Paused: nothing read, nothing sent. The stream, held back, waits;
	// the session, silent, is kept at eight of the janitor's rounds past
	// its timeout (4 s more).
	waitFor(t, 30*time.Second, "the stream waiting for its player, its session kept", func() bool {
		if e := m.event("box-paused", pb.SessionEvent_KIND_ENDED); e != nil {
			t.Fatalf("the session of a player paused without PAUSE ended: %s (stream stops %d, kept %d)", e.GetReason(), n.engine.ReaderStops(), n.silentKept.Load())
		}
		return n.engine.ReaderStops() >= 1 && n.silentKept.Load() >= 8
	})
	waiting = time.Now()
	if e := m.event("box-paused", pb.SessionEvent_KIND_ENDED); e != nil {
		t.Fatalf("the session of a player paused without PAUSE ended: %s", e.GetReason())
	}
	// The node reports it paused (vodctl sessions: paused) and, silent
	// past the session timeout, idle: as a session its client PAUSEd.
	r := m.reportAfter(t, "a load report listing the waiting session paused", func(r *pb.LoadReport) bool {
		return slices.Contains(r.GetPausedSessions(), "box-paused")
	})
	if !slices.ContainsFunc(r.GetIdleSessions(), func(i *pb.IdleSession) bool { return i.GetSessionId() == "box-paused" }) {
		t.Errorf("load report idle sessions %v, want the silent waiting session listed", r.GetIdleSessions())
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(nodeCollector{n})
	if v := gathered(t, reg, "vodnode_rtsp_reader_stops_total"); v < 1 {
		t.Errorf("vodnode_rtsp_reader_stops_total %v, want the stop counted", v)
	}
	// Resumed, with a keepalive as libavformat sends one once it reads
	// again (its session's timeout half gone): 200 kB in all, the title's
	// bytes in order from where the payloads collected start; the
	// keepalive's answer comes behind the bytes queued before it.
	resumed = time.Now()
	c.cseq++
	fmt.Fprintf(c.c, "GET_PARAMETER %s/ RTSP/1.0\r\nCSeq: %d\r\nSession: %s\r\n\r\n", url, c.cseq, sess)
	if res := c.readResponse(); res.StatusCode != 200 {
		t.Fatalf("keepalive on resuming: %s", statusLine(res))
	}
	c.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	for len(payload) < 200<<10 {
		if _, _, err := c.frame(); err != nil {
			t.Fatalf("media after the pause, %d bytes in: %v (ENDED %v)", len(payload), err, m.event("box-paused", pb.SessionEvent_KIND_ENDED))
		}
	}
	title := bytes.Repeat(newFakeOrigin(t).titles["sample-001"], 6)
	at := bytes.Index(title, payload[:188*7])
	if at < 0 || !bytes.Equal(payload, title[at:at+len(payload)]) {
		t.Fatalf("the stream after the pause is not the title's bytes in order (first payload at %d)", at)
	}
	if e := m.event("box-paused", pb.SessionEvent_KIND_ENDED); e != nil {
		t.Fatalf("session ended: %s", e.GetReason())
	}
	m.reportAfter(t, "a load report listing the session playing again", func(r *pb.LoadReport) bool {
		return slices.Contains(r.GetSessionIds(), "box-paused") && !slices.Contains(r.GetPausedSessions(), "box-paused")
	})
	return waiting, resumed
}

// gathered returns the value of the metric name (one series, a counter
// or a gauge) that reg gathers.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			if c := mf.GetMetric()[0].GetCounter(); c != nil {
				return c.GetValue()
			}
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no single series of %s gathered", name)
	return 0
}
