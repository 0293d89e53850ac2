package vodnode

import (
	"context"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// allReports returns the load reports received so far, in order.
func (m *fakeManager) allReports() []*pb.LoadReport {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reports)
}

// idleIn returns the entry of r's idle_sessions for sid, nil if none.
func idleIn(r *pb.LoadReport, sid string) *pb.IdleSession {
	for _, s := range r.GetIdleSessions() {
		if s.GetSessionId() == sid {
			return s
		}
	}
	return nil
}

// quietIn returns the entry of r's quiet_sessions for sid, nil if none.
func quietIn(r *pb.LoadReport, sid string) *pb.IdleSession {
	for _, s := range r.GetQuietSessions() {
		if s.GetSessionId() == sid {
			return s
		}
	}
	return nil
}

// TestLoadReportListsIdleHTTPSession: a node's load report lists an HTTP
// session as idle (idle_sessions, with its seconds since the viewer's
// last request) once its viewer has asked nothing for longer than
// SessionTimeout, not while a request is in progress however long it has
// run, and not before SessionTimeout has passed since the last request
// ended: it is listed quiet then (quiet_sessions), never both; the
// session stays (PauseTimeout), listed idle.
func TestLoadReportListsIdleHTTPSession(t *testing.T) {
	const st = 400 * time.Millisecond
	o := newFakeOrigin(t)
	m, maddr := startFastManager(t)
	n := startNode(t, startOrigin(t, o), withHTTP, func(n *Node) {
		n.SessionTimeout, n.PauseTimeout, n.ManagerAddr = st, time.Minute, maddr
	})
	waitPrefetch(t, n, "sample-001")

	// A progressive download, paced at 1.2 times the title's bitrate: a
	// 20 s title takes seconds, read as it comes.
	tok := mint(t, "idle-1", "sample-001", "node-1", "", time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, httpURL(n, tok, "sample-001.ts"), nil)
	begun := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", res.StatusCode)
	}
	read := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		read <- err
	}()
	// In progress for three SessionTimeouts, its last request's start that
	// long ago: a report taken then lists the session, not as idle.
	waitFor(t, 10*time.Second, "a report taken 3 SessionTimeouts into the download", func() bool {
		r := m.lastReport()
		return r != nil && r.GetAtUnixMs() >= begun.Add(3*st).UnixMilli()
	})
	select {
	case err := <-read:
		t.Fatalf("the download ended early (%v): no request in progress", err)
	default:
	}
	cancel()
	ended := time.Now()
	if err := <-read; err == nil {
		t.Fatal("the download completed: want it cut in progress")
	}
	// Idle once SessionTimeout has passed since the request ended.
	waitFor(t, 10*time.Second, "a report listing the session idle for a second", func() bool {
		r := m.lastReport()
		return idleIn(r, "idle-1").GetIdleSeconds() >= 1
	})
	inProgress, listed, quiet := 0, 0, 0
	for _, r := range m.allReports() {
		at := time.UnixMilli(r.GetAtUnixMs())
		if !slices.Contains(r.GetSessionIds(), "idle-1") {
			continue
		}
		idle, q := idleIn(r, "idle-1"), quietIn(r, "idle-1")
		if at.Before(ended) && at.After(begun.Add(st+100*time.Millisecond)) {
			inProgress++
		}
		switch {
		case q != nil && idle != nil:
			t.Errorf("report at %v lists the session both idle and quiet", at)
		case q != nil && at.Before(ended):
			t.Errorf("report at %v lists the session quiet while its request was in progress (%v in)", at, at.Sub(begun))
		case q != nil:
			quiet++
		case idle == nil && at.After(ended.Add(time.Second)):
			t.Errorf("report at %v lists the session neither quiet nor idle %v after its request ended", at, at.Sub(ended))
		}
		if idle == nil {
			continue
		}
		listed++
		// The node's request ended after the client cut it.
		if at.Before(ended) {
			t.Errorf("report at %v lists the session idle while its request was in progress (%v in)", at, at.Sub(begun))
			continue
		}
		if since := at.Sub(ended); since <= st {
			t.Errorf("report at %v lists the session idle %v after its request ended, before SessionTimeout (%v)", at, since, st)
		}
		if upTo := int64(at.Add(time.Millisecond).Sub(ended) / time.Second); idle.GetIdleSeconds() > upTo {
			t.Errorf("report at %v: idle %d s, more than the %d s since its request ended", at, idle.GetIdleSeconds(), upTo)
		}
	}
	if inProgress == 0 || listed == 0 || quiet == 0 {
		t.Fatalf("%d reports while the request ran past SessionTimeout, %d listing the session idle, %d quiet: want some of each", inProgress, listed, quiet)
	}
	if n.Stats().Sessions != 1 {
		t.Fatalf("sessions %d: the idle session should stay until PauseTimeout", n.Stats().Sessions)
	}
}

// TestLoadReportListsPausedRTSPSessionIdle: an RTSP session its client
// PAUSEd and left silent longer than SessionTimeout is listed idle (it
// lives PauseTimeout, and its subscriber's next request at the session
// limit may supersede it); one that plays is never listed (a silent one
// times out at SessionTimeout).
func TestLoadReportListsPausedRTSPSessionIdle(t *testing.T) {
	// A timeout a loaded machine's request round trips stay well within:
	// each session is silent between its requests (the playing one is set
	// up first, so that the other's SETUP to PAUSE are its own requests).
	const st = time.Second
	m, maddr := startFastManager(t)
	n := startNode(t, startOrigin(t, newFakeOrigin(t)), func(n *Node) {
		n.SessionTimeout, n.PauseTimeout, n.ManagerAddr = st, time.Minute, maddr
	})
	dialRTSP(t, n).play(nodeURL(n, mint(t, "playing", "sample-002", "node-1", "", time.Minute), "sample-002")) // silent: it times out
	pu := nodeURL(n, mint(t, "paused-idle", "sample-001", "node-1", "", time.Minute), "sample-001")
	pc := dialRTSP(t, n)
	rtpc, rtcpc := udpPair(t)
	id := pc.setupUDP(pu, rtpc, rtcpc)
	if res := pc.do("PLAY", pu+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("PLAY: %s", statusLine(res))
	}
	// Taken before the PAUSE is sent: the node counts the silence from
	// the PAUSE's arrival, which is after this and before its answer.
	paused := time.Now()
	if res := pc.do("PAUSE", pu+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("PAUSE: %s", statusLine(res))
	}
	waitFor(t, 10*time.Second, "a report listing the paused session idle", func() bool { return idleIn(m.lastReport(), "paused-idle") != nil })
	for _, r := range m.allReports() {
		if idleIn(r, "playing") != nil {
			t.Fatalf("a playing session listed idle: %v", r.GetIdleSessions())
		}
		// A report's time is cut to the millisecond: the instant it
		// stands for is before the next millisecond.
		if idleIn(r, "paused-idle") != nil && time.UnixMilli(r.GetAtUnixMs()+1).Before(paused.Add(st)) {
			t.Fatalf("the paused session listed idle before SessionTimeout passed: report at %v, paused at %v", time.UnixMilli(r.GetAtUnixMs()), paused)
		}
	}
	if n.lookupSession(id) == nil {
		t.Fatal("the paused session ended")
	}
}
