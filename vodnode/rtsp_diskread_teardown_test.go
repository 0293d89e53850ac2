package vodnode

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtcp"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/vodnode/deliver"
)

// TestRTSPDiskReadErrorThenTeardown: a client that answers the RTCP BYE
// of a read of the title's file that failed with a TEARDOWN (ffmpeg
// does) before the node has handled its stream's end (onStreamEnd, which
// hears it only once the BYE went, held here by streamEndHook) still has
// its session end for "disk-read-error", counted and logged once before
// the ENDED event, in MP2T and elementary-stream mode. Its ENDED said
// "teardown", the read error logged only after it: TestRTSPDiskReadError's
// ffmpeg runs failed so under load.
func TestRTSPDiskReadErrorThenTeardown(t *testing.T) {
	for _, mode := range []string{"mp2t", "es"} {
		t.Run(mode, func(t *testing.T) {
			o := newFakeOrigin(t)
			m, maddr := startFastManager(t)
			var log logtest.Buffer
			entered, release := make(chan struct{}, 4), make(chan struct{})
			defer close(release)
			n := startNode(t, startOrigin(t, o), func(n *Node) {
				n.ManagerAddr = maddr
				n.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))
				n.streamEndHook = func() {
					entered <- struct{}{}
					<-release
				}
			})
			const title = "sample-001"
			sid := "diskread-teardown-" + mode
			tok := mint(t, sid, title, "node-1", "", time.Minute)
			url, track := nodeURL(n, tok, title), "/trackID=0"
			if mode == "es" {
				url, track = esURL(n, tok, title), "/trackID=1" // the video
			}
			c := dialRTSP(t, n)
			res := c.do("SETUP", url+track, "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
			if res.StatusCode != 200 {
				t.Fatalf("SETUP: %s", statusLine(res))
			}
			id := sessionID(res)
			waitComplete(t, n, title)
			if res := c.do("PLAY", url+"/", "Session", id); res.StatusCode != 200 {
				t.Fatalf("PLAY: %s", statusLine(res))
			}
			cut := int64(len(o.titles[title])*3/20) / 188 * 188
			if err := os.Truncate(filepath.Join(n.DataDir, "titles", title+".ts"), cut); err != nil {
				t.Fatal(err)
			}
			c.c.SetReadDeadline(time.Now().Add(15 * time.Second))
			for bye := ""; bye != string(deliver.EndDiskRead); {
				ch, b, err := c.frame()
				if err != nil {
					t.Fatalf("no RTCP BYE: %v", err)
				}
				if ps, err := rtcp.Unmarshal(b); ch == 1 && err == nil {
					for _, p := range ps {
						if g, ok := p.(*rtcp.Goodbye); ok {
							bye = g.Reason
						}
					}
				}
			}
			select {
			case <-entered: // the stream's end is the node's to handle, held there
			case <-time.After(10 * time.Second):
				t.Fatal("onStreamEnd not called 10 s after the BYE")
			}
			if res := c.do("TEARDOWN", url+"/", "Session", id); res.StatusCode != 200 {
				t.Fatalf("TEARDOWN: %s", statusLine(res))
			}
			var e *pb.SessionEvent
			waitFor(t, 10*time.Second, "ENDED reported", func() bool {
				e = m.event(sid, pb.SessionEvent_KIND_ENDED)
				return e != nil
			})
			if e.GetReason() != string(deliver.EndDiskRead) {
				t.Errorf("ENDED reason %q, want %q", e.GetReason(), deliver.EndDiskRead)
			}
			if got := n.send.diskErrors.Load(); got != 1 {
				t.Errorf("%d disk read errors counted at ENDED, want 1", got)
			}
			if got := strings.Count(log.String(), "reading a title's file failed during an RTSP stream"); got != 1 {
				t.Errorf("the read error logged %d times at ENDED, want once:\n%s", got, log.String())
			}
		})
	}
}
