package vodnode

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4"
	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

// TestESEndedByManagerSendsByePerTrack: gortsplib's client playing both
// tracks of an elementary-stream session, over TCP and UDP, gets an RTCP
// BYE carrying the manager's reason on each track when the node ends the
// session on the manager's order (EndSessionsCommand), as an MP2T
// session's client does (TestEndedByManagerSendsBye).
func TestESEndedByManagerSendsByePerTrack(t *testing.T) {
	n := startNode(t, startOrigin(t, newFakeOrigin(t)))
	const reason = "ended by the manager (test)"
	for _, tr := range []gortsplib.Transport{gortsplib.TransportTCP, gortsplib.TransportUDP} {
		t.Run(tr.String(), func(t *testing.T) {
			sid := "es-bye-" + tr.String()
			u, err := base.ParseURL(esURL(n, mint(t, sid, "sample-001", "node-1", "", time.Minute), "sample-001"))
			if err != nil {
				t.Fatal(err)
			}
			c := gortsplib.Client{Scheme: u.Scheme, Host: u.Host, Transport: &tr}
			if err := c.Start2(); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			desc, _, err := c.Describe(u)
			if err != nil {
				t.Fatal(err)
			}
			if len(desc.Medias) != 2 {
				t.Fatalf("%d medias, want video and audio", len(desc.Medias))
			}
			if err := c.SetupAll(desc.BaseURL, desc.Medias); err != nil {
				t.Fatal(err)
			}
			type bye struct {
				track  int
				reason string
			}
			media := make(chan int, 2)
			byes := make(chan bye, 16)
			for i, m := range desc.Medias {
				var once sync.Once
				c.OnPacketRTP(m, m.Formats[0], func(*rtp.Packet) { once.Do(func() { media <- i }) })
				c.OnPacketRTCP(m, func(p rtcp.Packet) {
					if g, ok := p.(*rtcp.Goodbye); ok {
						select {
						case byes <- bye{i, g.Reason}:
						default:
						}
					}
				})
			}
			if _, err := c.Play(nil); err != nil {
				t.Fatal(err)
			}
			timeout := time.After(10 * time.Second)
			for range 2 {
				select {
				case <-media:
				case <-timeout:
					t.Fatal("no RTP on both tracks")
				}
			}
			if !n.endAdmission(sid, reason) {
				t.Fatal("no live session to end")
			}
			var got [2]bool
			for !got[0] || !got[1] {
				select {
				case b := <-byes:
					if b.reason != reason {
						t.Fatalf("track %d: BYE reason %q, want %q", b.track, b.reason, reason)
					}
					got[b.track] = true
				case <-timeout:
					t.Fatalf("RTCP BYE per track: %v", got)
				}
			}
			if got := n.Stats().Sessions; got != 0 {
				t.Fatalf("%d sessions after the end", got)
			}
		})
	}
}

// TestFFmpegStopsWhenTheManagerEnds: ffmpeg playing a title over RTSP, in
// MP2T and elementary-stream mode, over TCP and UDP, stops cleanly (exit
// 0, before the title's end) when the node ends its session on the
// manager's order: the BYE reaches it on every track (ffmpeg ends only
// once each track has had one). Without it ffmpeg waits in silence.
func TestFFmpegStopsWhenTheManagerEnds(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	const title = "sample-001"
	whole := bytesFrames(t, "0:a", o.titles[title])
	for _, mode := range []string{"mp2t", "es"} {
		for _, tr := range []string{"tcp", "udp"} {
			t.Run(mode+"-"+tr, func(t *testing.T) {
				t.Parallel()
				sid := "mgr-end-" + mode + "-" + tr
				tok := mint(t, sid, title, "node-1", "", time.Minute)
				url := nodeURL(n, tok, title)
				if mode == "es" {
					url = esURL(n, tok, title)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, "ffmpeg", "-hide_banner", "-nostats", "-loglevel", "error",
					"-rtsp_transport", tr, "-i", url, "-map", "0:a", "-fps_mode", "passthrough",
					"-f", "framecrc", "-flush_packets", "1", "-")
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				frames := 0
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					if len(sc.Bytes()) == 0 || sc.Bytes()[0] == '#' {
						continue
					}
					if frames++; frames == 20 { // ffmpeg is playing
						if !n.endAdmission(sid, "ended by the manager (test)") {
							t.Error("no live session to end")
						}
					}
				}
				err = cmd.Wait()
				if ctx.Err() != nil {
					t.Fatalf("ffmpeg still playing 30 s after it started (%d audio frames): no BYE reached it\n%s", frames, stderr.String())
				}
				if err != nil {
					t.Fatalf("ffmpeg: %v\n%s", err, stderr.String())
				}
				if frames < 20 || frames >= whole {
					t.Errorf("ffmpeg decoded %d audio frames; the title has %d, the end came after 20", frames, whole)
				}
			})
		}
	}
}

// TestESEndedByManagerBeforePlay: an elementary-stream session set up but
// not yet played (it has no stream) that the node ends on the manager's
// order still tells its client, with a BYE on each track's RTCP channel,
// as an MP2T session's stream, made at SETUP, does.
func TestESEndedByManagerBeforePlay(t *testing.T) {
	n := startNode(t, startOrigin(t, newFakeOrigin(t)))
	c := dialRTSP(t, n)
	url := esURL(n, mint(t, "es-bye-unplayed", "sample-001", "node-1", "", time.Minute), "sample-001")
	res := c.do("SETUP", url+"/trackID=1", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP video: %s", statusLine(res))
	}
	id := sessionID(res)
	if res := c.do("SETUP", url+"/trackID=2", "Transport", "RTP/AVP/TCP;unicast;interleaved=2-3", "Session", id); res.StatusCode != 200 {
		t.Fatalf("SETUP audio: %s", statusLine(res))
	}
	const reason = "ended by the manager (test)"
	if !n.endAdmission("es-bye-unplayed", reason) {
		t.Fatal("no live session to end")
	}
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for got := map[int]bool{}; !got[1] || !got[3]; {
		ch, b, err := c.frame()
		if err != nil {
			t.Fatalf("RTCP BYE on channels 1 and 3: got %v: %v", got, err)
		}
		ps, err := rtcp.Unmarshal(b)
		if ch%2 == 0 || err != nil {
			t.Fatalf("channel %d before PLAY: %v", ch, err)
		}
		for _, p := range ps {
			if g, ok := p.(*rtcp.Goodbye); ok {
				if g.Reason != reason {
					t.Fatalf("BYE reason %q, want %q", g.Reason, reason)
				}
				got[ch] = true
			}
		}
	}
	if res := c.do("PLAY", url+"/", "Session", id); res.StatusCode != 454 {
		t.Errorf("PLAY after the end: %s, want 454", statusLine(res))
	}
}
