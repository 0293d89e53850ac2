package acm

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// httpAdmit asks the HTTP front door for title as demo and returns the
// status and, on a redirect, the session id of its token.
func (e *env) httpAdmit(title string) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+e.m.HTTPAddr()+"/vod/"+title+".ts", nil)
	req.SetBasicAuth("demo", "demo")
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound {
		return res.StatusCode, ""
	}
	cl, err := e.signer.Parse(tokenFromLocation(res.Header.Get("Location")))
	if err != nil {
		e.t.Fatal(err)
	}
	return res.StatusCode, cl.Session
}

// sessionIDs returns the ids of the live sessions, sorted.
func (e *env) sessionIDs() []string {
	e.t.Helper()
	var ids []string
	for _, s := range e.sessions() {
		ids = append(ids, s.GetSessionId())
	}
	slices.Sort(ids)
	return ids
}

// awaitReports waits until the manager has applied two more load reports
// of node id: one sent after the caller's change.
func (e *env) awaitReports(id string) {
	e.t.Helper()
	from := e.reports(id)
	waitFor(e.t, 5*time.Second, "two more load reports of "+id, func() bool { return e.reports(id) >= from+2 })
}

// TestIdleHTTPSessionSuperseded: a subscriber at the session limit whose
// node reports one of its HTTP sessions idle (a zapping viewer's earlier
// title) is admitted: the session idle longest is ended at once (the node
// told, with the reason; its reservation and the subscriber's slot
// freed; its record carries the reason). While none of its sessions is
// idle, or only an RTSP one is listed, or an entry is malformed, the
// subscriber is refused (429) and nothing ends.
func TestIdleHTTPSessionSuperseded(t *testing.T) {
	records := filepath.Join(t.TempDir(), "sessions.jsonl")
	e := newManager(t, "", func(m *Manager) { m.MaxSessionsPerUser = 3; m.SessionRecordsFile = records })
	// The node holds every title: no fill, its reports steady
	// (reportsteady.go), the idle list applied from them all the same.
	var titles []*pb.StoredTitle
	for _, id := range []string{"t1", "t2", "t3", "adult-1"} {
		titles = append(titles, &pb.StoredTitle{TitleId: id, SizeBytes: 1_500_000, StoredBytes: 1_500_000})
	}
	n := e.startNode("n1", nodeOpts{titles: titles})
	var h1, h2 string
	for i, title := range []string{"t1", "t2"} {
		code, sid := e.httpAdmit(title)
		if code != http.StatusFound {
			t.Fatalf("HTTP %s: %d", title, code)
		}
		if err := n.event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			h1 = sid
		} else {
			h2 = sid
		}
	}
	r1 := e.admitOne("t3") // RTSP
	if err := n.event(r1, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	held := e.sessionIDs()
	refused := func(what, title string) {
		t.Helper()
		e.awaitReports("n1")
		if code, _ := e.httpAdmit(title); code != http.StatusTooManyRequests {
			t.Fatalf("%s: %d, want 429", what, code)
		}
		if got := e.sessionIDs(); !slices.Equal(got, held) {
			t.Fatalf("%s: sessions %v, want %v untouched", what, got, held)
		}
	}
	refused("none idle", "adult-1")
	n.setIdle(h2, -1) // an entry of negative seconds
	refused("a malformed entry listed idle", "adult-1")

	n.setIdle(h2, 70, h1, 90)
	e.awaitReports("n1")
	e.m.mu.Lock()
	steady := e.m.nodes["n1"].steady.print != 0 && e.m.quietLocked(e.m.nodes["n1"])
	e.m.mu.Unlock()
	if !steady {
		t.Fatal("n1's reports are not steady: the test would not show that a steady report's idle list is applied")
	}
	// Operators see which sessions are idle, and for how long.
	ls, err := e.admin.ListSessions(context.Background(), &pb.ListSessionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, si := range ls.Sessions {
		want := map[string]int64{h1: 90, h2: 70}[si.SessionId]
		if si.IdleS < want || si.IdleS > want+10 {
			t.Errorf("session %s listed idle %d s, want %d", si.SessionId, si.IdleS, want)
		}
	}
	superseded := func() float64 {
		var m dto.Metric
		if err := supersededTotal.WithLabelValues(store.ProtoHTTP).Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetCounter().GetValue()
	}
	counted := superseded()
	before := time.Now()
	code, h3 := e.httpAdmit("adult-1")
	if code != http.StatusFound {
		t.Fatalf("at the limit with idle HTTP sessions: %d, want 302", code)
	}
	want := []string{h2, h3, r1}
	slices.Sort(want)
	if got := e.sessionIDs(); !slices.Equal(got, want) {
		t.Fatalf("sessions %v, want %v: h1 (idle longest) ended", got, want)
	}
	if got := superseded() - counted; got != 1 {
		t.Errorf("vodcluster_superseded_sessions_total{protocol=\"http\"} went up by %v, want 1", got)
	}
	if r := e.reserved("n1"); r != 3*titleBps {
		t.Fatalf("reserved %d bit/s, want %d: h1's released", r, 3*titleBps)
	}
	cmd := n.endCommand(t)
	if !slices.Equal(cmd.GetSessionIds(), []string{h1}) || cmd.GetReason() != reasonSuperseded ||
		time.UnixMilli(cmd.GetRefuseUntilUnixMs()).Before(before.Add(e.m.TokenTTL-time.Second)) {
		t.Fatalf("node told %+v, want h1 %s ended (%q), its tokens refused for a token TTL", cmd, h1, reasonSuperseded)
	}
	// The node ends it: the record, held for its ENDED, carries the reason.
	if err := n.event(h1, pb.SessionEvent_KIND_ENDED); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "h1's record", func() bool { return len(readRecords(t, records)) == 1 })
	if r := readRecords(t, records)[0]; r.Session != h1 || r.Reason != reasonSuperseded || r.Protocol != store.ProtoHTTP {
		t.Fatalf("record %+v, want h1's with reason %q", r, reasonSuperseded)
	}

	// At the limit again, nothing idle but h1 (ended): refused (another
	// title than h3's, which would be the same viewer asking again).
	held = want
	n.setIdle(h1, 95)
	refused("only an ended session listed idle", "t1")

	// A PAUSEd RTSP session the node lists idle (its player sends no
	// keepalives while paused) is superseded too.
	n.setIdle(r1, 300)
	e.awaitReports("n1")
	code, h4 := e.httpAdmit("t1")
	if code != http.StatusFound {
		t.Fatalf("at the limit with a paused RTSP session idle: %d, want 302", code)
	}
	want = []string{h2, h3, h4}
	slices.Sort(want)
	if got := e.sessionIDs(); !slices.Equal(got, want) {
		t.Fatalf("sessions %v, want %v: r1 (paused) ended", got, want)
	}
	if cmd := n.endCommand(t); !slices.Equal(cmd.GetSessionIds(), []string{r1}) || cmd.GetReason() != reasonSuperseded {
		t.Fatalf("node told %+v, want r1 %s ended", cmd, r1)
	}
}
