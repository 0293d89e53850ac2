package vodnode

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"vodcluster/proto/token"
	pb "vodcluster/proto/vodcluster/v1"
)

// mintDoor is mint with the front door the viewer asked (Claims.Door),
// for protocol proto ("" any).
func mintDoor(t *testing.T, sid, title, door, proto string, ttl time.Duration) string {
	t.Helper()
	s, err := token.NewSigner(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.Sign(token.Claims{Session: sid, Title: title, Node: "node-1", Door: door, Proto: proto, User: "demo"}, time.Now(), ttl)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestSpentTokenBackToFrontDoor: a request that starts a session with a
// token whose session ended here (a TEARDOWN), from a new connection as
// GStreamer's fallback from UDP to TCP makes it, is sent back to the
// front door the token names (302 to the title's URL there, /es and the
// track kept, with a re-admission ticket naming its subscriber), expired
// or not; a session the manager ended (an
// operator's cut) is not undone so (401); a token naming no front door, or one not
// fit for a Location header, still gets 401, as does an expired token
// never used here (a node whose clock runs ahead would otherwise send a
// fresh token's viewer round and round) and a spent token over HTTP.
func TestSpentTokenBackToFrontDoor(t *testing.T) {
	o := newFakeOrigin(t)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), withHTTP, func(n *Node) { n.ManagerAddr = maddr })
	const door = "rtsp://vod.example.net:8554"
	spend := func(sid, tok string) {
		url := nodeURL(n, tok, "sample-001")
		c := dialRTSP(t, n)
		id := c.play(url)
		if res := c.do("TEARDOWN", url+"/", "Session", id); res.StatusCode != 200 {
			t.Fatalf("%s: TEARDOWN: %s", sid, statusLine(res))
		}
	}
	tok := mintDoor(t, "back", "sample-001", door, "rtsp", time.Minute)
	spend("back", tok)
	url := nodeURL(n, tok, "sample-001")
	for i, tc := range []struct{ method, url, loc string }{
		{"DESCRIBE", url, door + "/vod/sample-001"},
		{"SETUP", url + "/trackID=0", door + "/vod/sample-001/trackID=0"},
		{"DESCRIBE", "rtsp://" + n.RTSPAddr() + "/s/" + tok + "/es/sample-001", door + "/vod/sample-001/es"},
	} {
		res := dialRTSP(t, n).do(tc.method, tc.url, "Transport", "RTP/AVP/TCP;unicast")
		loc, ticket, _ := strings.Cut(strings.Join(res.Header["Location"], ","), "?readmit=")
		if res.StatusCode != 302 || res.StatusMessage != "Moved Temporarily" || loc != tc.loc {
			t.Errorf("%s %s with a spent token: %s, Location %q; want 302 to %s", tc.method, tc.url, statusLine(res), res.Header["Location"], tc.loc)
		}
		// The first answer has a ticket naming the subscriber, for this
		// title; the next ones none.
		if i == 0 {
			if c, err := n.signer.VerifyReadmit(ticket, time.Now(), "sample-001", "127.0.0.1"); err != nil || c.User != "demo" || c.Session != "back" {
				t.Errorf("%s %s: re-admission ticket %+v, %v", tc.method, tc.url, c, err)
			}
		} else if ticket != "" {
			t.Errorf("%s %s: a second re-admission ticket for one ended session", tc.method, tc.url)
		}
	}

	// A session admitted with a ticket gets none: tickets do not chain
	// past the credentials first given.
	signer, _ := token.NewSigner(testSecret)
	again, err := signer.Sign(token.Claims{Session: "again", Title: "sample-001", Node: "node-1", Door: door, Proto: "rtsp", User: "demo", Readmitted: true}, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	spend("again", again)
	res := dialRTSP(t, n).do("DESCRIBE", nodeURL(n, again, "sample-001"))
	if loc := strings.Join(res.Header["Location"], ""); res.StatusCode != 302 || loc != door+"/vod/sample-001" {
		t.Errorf("a spent token of a session admitted with a ticket: %s, Location %q; want 302 with no ticket", statusLine(res), loc)
	}

	// Expired and spent (its session ended here long after its token
	// expired): back to the front door too.
	old := mintDoor(t, "old", "sample-001", door, "rtsp", -time.Minute)
	spendHere(n, "old")
	if res := dialRTSP(t, n).do("DESCRIBE", nodeURL(n, old, "sample-001")); res.StatusCode != 302 {
		t.Errorf("an expired spent token: %s, want 302", statusLine(res))
	}

	// Ended by the manager (an operator's cut, a viewer moved): 401, the
	// node does not undo it; playing, or not arrived yet.
	cut := mintDoor(t, "cut", "sample-001", door, "rtsp", time.Minute)
	cutURL := nodeURL(n, cut, "sample-001")
	playing := dialRTSP(t, n)
	playing.play(cutURL)
	notYet := mintDoor(t, "notyet", "sample-001", door, "rtsp", time.Minute)
	n.mgr.command(&pb.NodeCommand{Command: &pb.NodeCommand_EndSessions{EndSessions: &pb.EndSessionsCommand{
		SessionIds: []string{"cut", "notyet"}, Reason: "ended by the operator: test", RefuseUntilUnixMs: time.Now().Add(time.Minute).UnixMilli()}}})
	for name, tok := range map[string]string{"playing": cut, "not arrived": notYet} {
		res := dialRTSP(t, n).do("DESCRIBE", nodeURL(n, tok, "sample-001"))
		if res.StatusCode != 401 || !strings.Contains(string(res.Body), "ended by the manager") {
			t.Errorf("a session the manager ended (%s): %s, want 401 ended by the manager", name, statusLine(res))
		}
	}

	// 401 for the rest.
	noDoor := mint(t, "nodoor", "sample-001", "node-1", "", time.Minute)
	spend("nodoor", noDoor)
	badDoor := mintDoor(t, "baddoor", "sample-001", "rtsp://x\r\nX-Injected: 1", "rtsp", time.Minute)
	spend("baddoor", badDoor)
	for name, tok := range map[string]string{"no front door": noDoor, "a front door unfit for Location": badDoor} {
		res := dialRTSP(t, n).do("DESCRIBE", nodeURL(n, tok, "sample-001"))
		if res.StatusCode != 401 || !strings.Contains(string(res.Body), "already used") {
			t.Errorf("%s: %s, want 401 already used", name, statusLine(res))
		}
	}
	fresh := mintDoor(t, "fresh", "sample-001", door, "rtsp", -time.Minute)
	if res := dialRTSP(t, n).do("DESCRIBE", nodeURL(n, fresh, "sample-001")); res.StatusCode != 401 || !strings.Contains(string(res.Body), "expired") {
		t.Errorf("an expired token never used here: %s, want 401 expired", statusLine(res))
	}
	httpTok := mintDoor(t, "web", "sample-001", door, "", time.Minute)
	spendHere(n, "web")
	if res, body := get(t, httpURL(n, httpTok, "sample-001.ts"), "Range", "bytes=0-187"); res.StatusCode != 401 || !strings.Contains(string(body), "already used") {
		t.Errorf("HTTP GET with a spent token: %d %s, want 401 already used", res.StatusCode, body)
	}
}

// spendHere spends the token of admission session sid on n as a session
// that ended there does.
func spendHere(n *Node, sid string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.spendLocked(sid, time.Now().Add(time.Minute))
}
