package vodnode

import (
	"slices"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestLoadReportListsPausedAndFinished: the load report lists an RTSP
// session its client PAUSEd in paused_sessions at once (not only once it
// is idle), one whose play reached the end of the title in
// finished_sessions, and neither once a PLAY comes; a playing session is
// in neither. The manager shows them so in vodctl sessions.
func TestLoadReportListsPausedAndFinished(t *testing.T) {
	m, maddr := startFastManager(t)
	n := startNode(t, startOrigin(t, newFakeOrigin(t)), func(n *Node) {
		n.ManagerAddr = maddr
		n.SessionTimeout, n.PauseTimeout = time.Minute, time.Minute
	})
	listed := func(r *pb.LoadReport, sid string) (paused, finished bool) {
		return slices.Contains(r.GetPausedSessions(), sid), slices.Contains(r.GetFinishedSessions(), sid)
	}

	pu := nodeURL(n, mint(t, "st-paused", "sample-001", "node-1", "", time.Minute), "sample-001")
	pc := dialRTSP(t, n)
	prtp, prtcp := udpPair(t)
	pid := pc.setupUDP(pu, prtp, prtcp)
	if res := pc.do("PLAY", pu+"/", "Session", pid); res.StatusCode != 200 {
		t.Fatalf("PLAY: %s", statusLine(res))
	}
	fu := nodeURL(n, mint(t, "st-finished", "sample-002", "node-1", "", time.Minute), "sample-002")
	fc := dialRTSP(t, n)
	frtp, frtcp := udpPair(t)
	fid := fc.setupUDP(fu, frtp, frtcp)
	if res := fc.do("PLAY", fu+"/", "Session", fid, "Range", "npt=18-"); res.StatusCode != 200 {
		t.Fatalf("PLAY npt=18-: %s", statusLine(res))
	}
	r := m.reportAfter(t, "a report with both sessions", func(r *pb.LoadReport) bool {
		return slices.Contains(r.GetSessionIds(), "st-paused") && slices.Contains(r.GetSessionIds(), "st-finished")
	})
	if p, f := listed(r, "st-paused"); p || f {
		t.Fatalf("a playing session listed paused %v, finished %v", p, f)
	}

	if res := pc.do("PAUSE", pu+"/", "Session", pid); res.StatusCode != 200 {
		t.Fatalf("PAUSE: %s", statusLine(res))
	}
	r = m.reportAfter(t, "a report listing the session paused", func(r *pb.LoadReport) bool { p, _ := listed(r, "st-paused"); return p })
	if _, f := listed(r, "st-paused"); f || idleIn(r, "st-paused") != nil {
		t.Fatalf("paused just now: listed finished %v, idle %v", f, idleIn(r, "st-paused"))
	}
	r = m.reportAfter(t, "a report listing the session at the end finished", func(r *pb.LoadReport) bool { _, f := listed(r, "st-finished"); return f })
	if p, _ := listed(r, "st-finished"); p {
		t.Fatal("a finished session listed paused too")
	}

	if res := pc.do("PLAY", pu+"/", "Session", pid); res.StatusCode != 200 {
		t.Fatalf("PLAY after PAUSE: %s", statusLine(res))
	}
	if res := fc.do("PLAY", fu+"/", "Session", fid, "Range", "npt=0-"); res.StatusCode != 200 {
		t.Fatalf("PLAY back from the end: %s", statusLine(res))
	}
	r = m.reportAfter(t, "a report after both PLAYs", func(r *pb.LoadReport) bool {
		p, _ := listed(r, "st-paused")
		_, f := listed(r, "st-finished")
		return !p && !f
	})
	if !slices.Contains(r.GetSessionIds(), "st-paused") || !slices.Contains(r.GetSessionIds(), "st-finished") {
		t.Fatalf("a session ended: %v", r.GetSessionIds())
	}
}
