package vodnode

import (
	"slices"
	"strings"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestPlayAtTheEndIsRefused: once a play has reached the end of its title
// (RTCP BYE on each track, the session listed finished), a PLAY without
// Range, or with only an end, has nothing to play from there: it is
// answered 457, as a Range starting at the end is, and nothing is sent
// (no second BYE). Neither refusal, nor a 457 for a start past the end,
// changes the session: the load report still lists it finished. A PLAY
// with a Range start plays it again, and it is no longer finished. In
// MP2T and elementary-stream mode. (A PLAY without Range was answered 200
// at the end with a play that ended again at once, a second BYE and
// sender reports of nothing; a 457 cleared the finished flag.)
func TestPlayAtTheEndIsRefused(t *testing.T) {
	m, maddr := startFastManager(t)
	n := startNode(t, startOrigin(t, newFakeOrigin(t)), func(n *Node) {
		n.ManagerAddr = maddr
		n.SessionTimeout, n.PauseTimeout = time.Minute, time.Minute
	})
	// finished waits for a report taken after now and returns whether it
	// lists sid finished, once it lists sid at all.
	finished := func(sid string) bool {
		t.Helper()
		r := m.reportAfter(t, "a load report listing "+sid, func(r *pb.LoadReport) bool { return slices.Contains(r.GetSessionIds(), sid) })
		return slices.Contains(r.GetFinishedSessions(), sid)
	}
	for _, mode := range []string{"mp2t", "es"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			sid, title := "at-end-"+mode, "short-001"
			tok := mint(t, sid, title, "node-1", "", time.Minute)
			url, rtcpChans := nodeURL(n, tok, title), []int{1}
			c := dialRTSP(t, n)
			var id string
			if mode == "mp2t" {
				res := c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
				if res.StatusCode != 200 {
					t.Fatalf("SETUP: %s", statusLine(res))
				}
				id = sessionID(res)
			} else {
				url, rtcpChans = esURL(n, tok, title), []int{1, 3}
				res := c.do("SETUP", url+"/trackID=1", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
				if res.StatusCode != 200 {
					t.Fatalf("SETUP video: %s", statusLine(res))
				}
				id = sessionID(res)
				if res := c.do("SETUP", url+"/trackID=2", "Transport", "RTP/AVP/TCP;unicast;interleaved=2-3", "Session", id); res.StatusCode != 200 {
					t.Fatalf("SETUP audio: %s", statusLine(res))
				}
			}
			if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=4-"); res.StatusCode != 200 {
				t.Fatalf("PLAY npt=4-: %s", statusLine(res))
			}
			// media until a BYE on each track's RTCP channel
			byes := map[int]bool{}
			c.c.SetReadDeadline(time.Now().Add(15 * time.Second))
			for len(byes) < len(rtcpChans) {
				ch, b, err := c.frame()
				if err != nil {
					t.Fatalf("BYE on channels %v: got %v: %v", rtcpChans, byes, err)
				}
				if ch%2 == 1 && hasBye(b) {
					byes[ch] = true
				}
			}
			if !finished(sid) {
				t.Fatal("not listed finished after the BYE")
			}
			for _, rng := range []string{"", "npt=-3", "npt=now-"} {
				hdr := []string{"Session", id}
				if rng != "" {
					hdr = append(hdr, "Range", rng)
				}
				if res := c.do("PLAY", url+"/", hdr...); res.StatusCode != 457 {
					t.Errorf("PLAY %q at the end: %s, want 457", rng, statusLine(res))
				}
			}
			if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=60-"); res.StatusCode != 457 || !strings.Contains(string(res.Body), "is at or past the end") {
				// "at or": a start equal to the duration ("npt=20.011-" of
				// a 20.011 s title) is refused with the same words.
				t.Errorf("PLAY npt=60- of a 6 s title: %s, want 457 at or past the end", statusLine(res))
			}
			// Nothing sent for the refused PLAYs (the node answers each
			// request after what it sent before it: the frames up to the
			// next answer are all there is).
			c.c.SetReadDeadline(time.Now().Add(time.Second))
			if ch, b, err := c.frame(); err == nil {
				t.Fatalf("channel %d: %d bytes sent after the refused PLAYs", ch, len(b))
			}
			if !finished(sid) {
				t.Fatal("no longer listed finished after PLAYs refused with 457")
			}
			if res := c.do("OPTIONS", url+"/", "Session", id); res.StatusCode != 200 {
				t.Fatalf("the session after the refused PLAYs: OPTIONS %s", statusLine(res))
			}
			if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=0-"); res.StatusCode != 200 {
				t.Fatalf("PLAY npt=0- after the end: %s", statusLine(res))
			}
			if finished(sid) {
				t.Fatal("still listed finished once played again")
			}
		})
	}
}
