package vodnode

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSpentTokensOutliveARestart: a token spent by a session that ended
// is still refused (401) by the node restarted on the same data dir within
// the token's life, one the manager ended still as such (not sent back
// to the front door), one whose viewer had a re-admission ticket gets no
// second; entries that expired are not carried, and a file that
// does not parse does not stop the node.
func TestSpentTokensOutliveARestart(t *testing.T) {
	o := newFakeOrigin(t)
	addr := startOrigin(t, o)
	dir := t.TempDir()
	first := startNode(t, addr, func(n *Node) { n.DataDir = dir })
	first.refuseTokens([]string{"cut"}, time.Now().Add(time.Minute)) // ended by the manager before the viewer came
	spendHere(first, "ticketed")
	if _, got := first.ticketFor("ticketed", true); !got {
		t.Fatal("no first ticket")
	}
	tok := mint(t, "spent-once", "sample-001", "node-1", "", time.Minute)
	c := dialRTSP(t, first)
	id := c.play(nodeURL(first, tok, "sample-001"))
	if res := c.do("TEARDOWN", nodeURL(first, tok, "sample-001")+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("TEARDOWN: %s", statusLine(res))
	}
	waitFor(t, 5*time.Second, "the session ended", func() bool { return first.Stats().Sessions == 0 })
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	second := startNode(t, addr, func(n *Node) { n.DataDir = dir })
	if res := dialRTSP(t, second).do("DESCRIBE", nodeURL(second, tok, "sample-001")); res.StatusCode != 401 {
		t.Fatalf("the spent token after a restart: %s, want 401", statusLine(res))
	}
	// One the manager ended stays so: 401, not back to the front door.
	if res := dialRTSP(t, second).do("DESCRIBE", nodeURL(second, mintDoor(t, "cut", "sample-001", "rtsp://front:554", "rtsp", time.Minute), "sample-001")); res.StatusCode != 401 || !strings.Contains(string(res.Body), "ended by the manager") {
		t.Fatalf("a token the manager ended, after a restart: %s, want 401 ended by the manager", statusLine(res))
	}
	// One whose viewer had its re-admission ticket gets no second.
	if res := dialRTSP(t, second).do("DESCRIBE", nodeURL(second, mintDoor(t, "ticketed", "sample-001", "rtsp://front:554", "rtsp", time.Minute), "sample-001")); res.StatusCode != 302 || strings.Contains(strings.Join(res.Header["Location"], ""), "readmit") {
		t.Fatalf("a token whose viewer had its ticket, after a restart: %s, Location %q; want 302 with no ticket", statusLine(res), res.Header["Location"])
	}
	if res := dialRTSP(t, second).do("DESCRIBE", nodeURL(second, mint(t, "fresh", "sample-001", "node-1", "", time.Minute), "sample-001")); res.StatusCode != 200 {
		t.Fatalf("a fresh token after a restart: %s", statusLine(res))
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}

	// Expired entries are dropped at load; a broken file is ignored.
	path := filepath.Join(dir, usedTokensFile)
	past := time.Now().Add(-time.Minute).UnixMilli()
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`{"until_unix_ms":{"long-gone":%d}}`, past)), 0o600); err != nil {
		t.Fatal(err)
	}
	third := startNode(t, addr, func(n *Node) { n.DataDir = dir })
	third.mu.Lock()
	_, kept := third.used["long-gone"]
	third.mu.Unlock()
	if kept {
		t.Fatal("an expired spent token was carried over")
	}
	third.Close()
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	startNode(t, addr, func(n *Node) { n.DataDir = dir }) // starts (the file is logged and left)
}

// TestLiveTokensSpentAfterACrash: the tokens of the sessions a node was
// playing when it crashed (no clean stop to end them and spend their
// tokens) are spent in the node restarted on its data dir: an RTSP
// viewer replaying its node URL is sent back to the front door with a
// re-admission ticket, as after a clean stop, and an HTTP one without a
// front door is refused 401. (They were taken as fresh: sessions the
// manager had ended, played untracked, reserving nothing.)
func TestLiveTokensSpentAfterACrash(t *testing.T) {
	o := newFakeOrigin(t)
	addr := startOrigin(t, o)
	dir := t.TempDir()
	first := startNode(t, addr, withHTTP, func(n *Node) { n.DataDir = dir })
	rtspTok := mintDoor(t, "crash-rtsp", "sample-001", "rtsp://front:554", "rtsp", time.Minute)
	dialRTSP(t, first).play(nodeURL(first, rtspTok, "sample-001"))
	httpTok := mint(t, "crash-http", "sample-001", "node-1", "", time.Minute)
	if res, _ := get(t, httpURL(first, httpTok, "sample-001.ts"), "Range", "bytes=0-187"); res.StatusCode != 206 {
		t.Fatalf("HTTP: %d", res.StatusCode)
	}
	// The crash: the file as the janitor wrote it last, both sessions
	// live, taken to a new data dir (the first node holds its own).
	path := filepath.Join(dir, usedTokensFile)
	var saved []byte
	waitFor(t, 10*time.Second, "the live sessions saved", func() bool {
		saved, _ = os.ReadFile(path)
		return strings.Contains(string(saved), "crash-rtsp") && strings.Contains(string(saved), "crash-http")
	})
	dir2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir2, usedTokensFile), saved, 0o600); err != nil {
		t.Fatal(err)
	}
	second := startNode(t, addr, withHTTP, func(n *Node) { n.DataDir = dir2 })
	res := dialRTSP(t, second).do("DESCRIBE", nodeURL(second, rtspTok, "sample-001"))
	if res.StatusCode != 302 || !strings.Contains(strings.Join(res.Header["Location"], ""), "readmit") {
		t.Errorf("RTSP replay after the crash: %s, Location %q; want 302 to the front door with a ticket", statusLine(res), res.Header["Location"])
	}
	if res, _ := get(t, httpURL(second, httpTok, "sample-001.ts"), "Range", "bytes=0-187"); res.StatusCode != 401 {
		t.Errorf("HTTP replay after the crash: %d, want 401", res.StatusCode)
	}
}
