package vodnode

import (
	"errors"
	"os"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestESAbortBytesSentIsWhatTheClientGot: the bytes_sent of an
// elementary-stream session over TCP that the node ends on the manager's
// order (Abort, which does not wait for the play's goroutines over TCP)
// are exactly the interleaved frames its client read, the BYE on each
// track included: ended while playing, and while PAUSEd (its sender
// reports sent by the play's report loop).
func TestESAbortBytesSentIsWhatTheClientGot(t *testing.T) {
	t.Parallel()
	m, maddr := startFastManager(t)
	n := startNode(t, startOrigin(t, newFakeOrigin(t)), func(n *Node) {
		n.ManagerAddr = maddr
		n.SessionTimeout, n.PauseTimeout = time.Minute, time.Minute
	})
	for i, paused := range []bool{false, true} {
		name := map[bool]string{false: "playing", true: "paused"}[paused]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sid, title := "es-abort-bytes-"+name, []string{"short-001", "short-002"}[i]
			tok := mint(t, sid, title, "node-1", "", time.Minute)
			url := esURL(n, tok, title)
			c := dialRTSP(t, n)
			res := c.do("SETUP", url+"/trackID=1", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
			if res.StatusCode != 200 {
				t.Fatalf("SETUP video: %s", statusLine(res))
			}
			id := sessionID(res)
			if res := c.do("SETUP", url+"/trackID=2", "Transport", "RTP/AVP/TCP;unicast;interleaved=2-3", "Session", id); res.StatusCode != 200 {
				t.Fatalf("SETUP audio: %s", statusLine(res))
			}
			if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=0-"); res.StatusCode != 200 {
				t.Fatalf("PLAY: %s", statusLine(res))
			}
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
			if paused {
				if res := c.do("PAUSE", url+"/", "Session", id); res.StatusCode != 200 {
					t.Fatalf("PAUSE: %s", statusLine(res))
				}
			}
			const reason = "ended by the manager (test)"
			if !n.endAdmission(sid, reason) {
				t.Fatal("no live session to end")
			}
			byes := map[int]bool{}
			c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			for len(byes) < 2 {
				ch, b, err := c.frame()
				if err != nil {
					t.Fatalf("BYE on channels 1 and 3: got %v: %v", byes, err)
				}
				if ch%2 == 1 && hasBye(b) {
					byes[ch] = true
				}
			}
			// Nothing follows the BYEs; what the client read is all.
			c.c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			if ch, _, err := c.frame(); err == nil {
				t.Errorf("a frame on channel %d after the BYEs", ch)
			} else if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("reading after the BYEs: %v", err)
			}
			var ended *pb.SessionEvent
			waitFor(t, 10*time.Second, "ENDED reported", func() bool {
				ended = m.event(sid, pb.SessionEvent_KIND_ENDED)
				return ended != nil
			})
			if ended.GetReason() != reason {
				t.Errorf("ENDED reason %q", ended.GetReason())
			}
			if got, want := ended.GetBytesSent(), c.frameBytes; got != want {
				t.Errorf("bytes_sent %d, the client read %d bytes of interleaved frames (%+d)", got, want, got-want)
			}
		})
	}
}
