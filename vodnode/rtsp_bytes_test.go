package vodnode

import (
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestTCPBytesSentIsWhatTheClientGot: the bytes_sent an RTSP session over
// TCP reports to the manager at its end are exactly the interleaved
// frames its client read (RTP and RTCP, each with its 4-byte '$'
// header): the sender reports sent with the media, those sent while the
// play is PAUSEd, and the BYE at the end of the title included, in MP2T
// and elementary-stream mode. (An MP2T stream's RTCP sent on its own over
// TCP, its idle reports and its BYE, was left out, as it is not over UDP.)
func TestTCPBytesSentIsWhatTheClientGot(t *testing.T) {
	t.Parallel() // real-time bound: about 11 s
	m, maddr := startFastManager(t)
	n := startNode(t, startOrigin(t, newFakeOrigin(t)), func(n *Node) {
		n.ManagerAddr = maddr
		n.SessionTimeout, n.PauseTimeout = time.Minute, time.Minute
	})
	for i, mode := range []string{"mp2t", "es"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			sid, title := "tcp-bytes-"+mode, []string{"short-001", "short-002"}[i]
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
			if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=0-"); res.StatusCode != 200 {
				t.Fatalf("PLAY: %s", statusLine(res))
			}
			// some media, then PAUSE, and a sender report sent while paused
			c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			for rtp := 0; rtp < 50; {
				ch, _, err := c.frame()
				if err != nil {
					t.Fatalf("after %d RTP packets: %v", rtp, err)
				}
				if ch%2 == 0 {
					rtp++
				}
			}
			if res := c.do("PAUSE", url+"/", "Session", id); res.StatusCode != 200 {
				t.Fatalf("PAUSE: %s", statusLine(res))
			}
			c.c.SetReadDeadline(time.Now().Add(15 * time.Second)) // reports every 5 s
			for {
				ch, b, err := c.frame()
				if err != nil {
					t.Fatalf("no sender report while paused: %v", err)
				}
				if ch%2 == 1 && !hasBye(b) {
					break
				}
			}
			// played on to the end of the title: a BYE on each RTCP channel
			if res := c.do("PLAY", url+"/", "Session", id); res.StatusCode != 200 {
				t.Fatalf("PLAY after PAUSE: %s", statusLine(res))
			}
			byes := map[int]bool{}
			c.c.SetReadDeadline(time.Now().Add(20 * time.Second))
			for len(byes) < len(rtcpChans) {
				ch, b, err := c.frame()
				if err != nil {
					t.Fatalf("BYE on channels %v: got %v: %v", rtcpChans, byes, err)
				}
				if ch%2 == 1 && hasBye(b) {
					byes[ch] = true
				}
			}
			// TEARDOWN is answered after whatever was sent before it
			if res := c.do("TEARDOWN", url+"/", "Session", id); res.StatusCode != 200 {
				t.Fatalf("TEARDOWN: %s", statusLine(res))
			}
			var ended *pb.SessionEvent
			waitFor(t, 10*time.Second, "ENDED reported", func() bool {
				ended = m.event(sid, pb.SessionEvent_KIND_ENDED)
				return ended != nil
			})
			if ended.GetReason() != "teardown" {
				t.Errorf("ENDED reason %q", ended.GetReason())
			}
			if got, want := ended.GetBytesSent(), c.frameBytes; got != want {
				t.Errorf("bytes_sent %d, the client read %d bytes of interleaved frames (%+d)", got, want, got-want)
			}
		})
	}
}
