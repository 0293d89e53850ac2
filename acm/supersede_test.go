package acm

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// httpAdmit asks the HTTP front door for title as demo and returns the
// status and, on a redirect, the session id of its token.
func (e *env) httpAdmit(title string) (int, string) {
	e.t.Helper()
	return e.httpAdmitFrom("127.0.0.1", title)
}

// httpAdmitFrom is httpAdmit from the loopback address from.
func (e *env) httpAdmitFrom(from, title string) (int, string) {
	e.t.Helper()
	res, _ := e.httpAskFrom(from, title)
	if res.StatusCode != http.StatusFound {
		return res.StatusCode, ""
	}
	cl, err := e.signer.Parse(tokenFromLocation(res.Header.Get("Location")))
	if err != nil {
		e.t.Fatal(err)
	}
	return res.StatusCode, cl.Session
}

// httpAskFrom asks the front door for title over HTTP as demo from
// address from, not following its redirect: the answer and its body.
func (e *env) httpAskFrom(from, title string) (*http.Response, string) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+e.m.HTTPAddr()+"/vod/"+title+".ts", nil)
	req.SetBasicAuth("demo", "demo")
	dial := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}).DialContext
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: dial},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return res, string(body)
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
	superseded := func() float64 { return counterValue(t, supersededTotal.WithLabelValues(store.ProtoHTTP)) }
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

// A viewer zapping over HTTP faster than its sessions go idle (60 s) was
// refused at the session limit (nine titles 3 s apart: the ninth refused
// for 40 s). At the limit, a session of the subscriber its node lists
// quiet (no request in progress) for 10 s or more, from the new
// request's client address, gives way: the same player's earlier title.
// One quiet for less (an HLS player between segments), or from another
// address (another household member's player), does not; an idle one
// goes before a quiet one.
func TestQuietHTTPSessionOfTheSameAddressSuperseded(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.MaxSessionsPerUser = 2 })
	var titles []*pb.StoredTitle
	for _, id := range []string{"t1", "t2", "t3", "adult-1"} {
		titles = append(titles, &pb.StoredTitle{TitleId: id, SizeBytes: 1_500_000, StoredBytes: 1_500_000})
	}
	n := e.startNode("n1", nodeOpts{titles: titles})
	admit := func(from, title string) string {
		t.Helper()
		code, sid := e.httpAdmitFrom(from, title)
		if code != http.StatusFound {
			t.Fatalf("HTTP %s from %s: %d", title, from, code)
		}
		if err := n.event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
			t.Fatal(err)
		}
		return sid
	}
	mine, theirs := admit("127.0.0.1", "t1"), admit("127.0.0.2", "t2")
	held := e.sessionIDs()
	// refused checks a 429, the sessions untouched, and its Retry-After
	// (seconds within lo..hi; none when hi is 0) and text.
	refused := func(what string, lo, hi int) {
		t.Helper()
		e.awaitReports("n1")
		res, body := e.httpAskFrom("127.0.0.1", "t3")
		if res.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("%s: %d, want 429", what, res.StatusCode)
		}
		ra := res.Header.Values("Retry-After")
		if hi == 0 {
			if len(ra) != 0 || !strings.HasSuffix(strings.TrimSpace(body), "(60 s unless set).") {
				t.Errorf("%s: Retry-After %q, want none; text %q", what, ra, body)
			}
		} else {
			retryAfterIn(t, what, ra, lo, hi)
			if !strings.Contains(body, "(Retry-After: "+ra[0]+"), when an HTTP player at this address will have been quiet for 10s") {
				t.Errorf("%s: the text does not say when to ask again: %q", what, body)
			}
		}
		if got := e.sessionIDs(); !slices.Equal(got, held) {
			t.Fatalf("%s: sessions %v, want %v untouched", what, got, held)
		}
	}
	refused("neither session quiet", 0, 0)
	n.setQuiet(theirs, 30)
	refused("another address's session quiet 30 s", 0, 0)
	// This address's session quiet 5 s may be an HLS player between
	// segments (up to 8 s): no time is known.
	n.setQuiet(mine, 5, theirs, 30)
	refused("this address's session quiet 5 s, another's 30 s", 0, 0)
	// Quiet 8 s, it gives way in 2 s: the 429 says so (Retry-After, a
	// second more for the whole seconds nodes report).
	n.setQuiet(mine, 8, theirs, 30)
	refused("this address's session quiet 8 s", 2, 3)

	n.setQuiet(mine, 12, theirs, 30)
	e.awaitReports("n1")
	code, next := e.httpAdmitFrom("127.0.0.1", "t3")
	if code != http.StatusFound {
		t.Fatalf("at the limit, this address's session quiet 12 s: %d, want 302", code)
	}
	want := []string{theirs, next}
	slices.Sort(want)
	if got := e.sessionIDs(); !slices.Equal(got, want) {
		t.Fatalf("sessions %v, want %v: the quiet one of this address ended", got, want)
	}
	if cmd := n.endCommand(t); !slices.Equal(cmd.GetSessionIds(), []string{mine}) || cmd.GetReason() != reasonSuperseded {
		t.Fatalf("node told %+v, want %s ended", cmd, mine)
	}
	if err := n.event(next, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}

	// An idle session (of another address) goes before a quiet one.
	n.setQuiet(next, 40)
	n.setIdle(theirs, 70)
	e.awaitReports("n1")
	code, last := e.httpAdmitFrom("127.0.0.1", "adult-1")
	if code != http.StatusFound {
		t.Fatalf("at the limit, one idle and one quiet: %d, want 302", code)
	}
	want = []string{next, last}
	slices.Sort(want)
	if got := e.sessionIDs(); !slices.Equal(got, want) {
		t.Fatalf("sessions %v, want %v: the idle one ended first", got, want)
	}
}

// sameClient keys addresses as the connection limit does: an
// IPv4-mapped address as IPv4, IPv6 by its /64.
func TestSameClient(t *testing.T) {
	for _, c := range []struct {
		session, ip string
		want        bool
	}{
		{"192.0.2.7:5000", "192.0.2.7", true},
		{"[::ffff:192.0.2.7]:5000", "192.0.2.7", true},
		{"192.0.2.7:5000", "192.0.2.8", false},
		{"[2001:db8:1:2:aaaa::1]:5000", "2001:db8:1:2:bbbb::9", true},
		{"[2001:db8:1:3::1]:5000", "2001:db8:1:2::1", false},
		{"", "192.0.2.7", false},
		{"192.0.2.7:5000", "", false},
	} {
		if got := sameClient(c.session, c.ip); got != c.want {
			t.Errorf("sameClient(%q, %q) = %v, want %v", c.session, c.ip, got, c.want)
		}
	}
}

// counterValue reads counter c (a labelled series of a CounterVec too).
func counterValue(t testing.TB, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
