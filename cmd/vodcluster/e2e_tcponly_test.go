package main

import (
	"strings"
	"sync"
	"testing"
	"time"

	"vodcluster/vodnode"
)

// TestDefaultTransportsThroughFrontDoorToTCPOnlyNodes: with nodes that
// send RTSP media over TCP only (node tcp_only), players left to their
// default transports, which offer UDP first, play through the front door:
// ffmpeg follows the 302, is answered 461 to its SETUP over UDP and sets
// up over TCP on the same connection; GStreamer's rtspsrc does the same
// and plays the title to its end. Behind a network that drops UDP, ffmpeg
// never falls back by itself, and rtspsrc only after 5 s without a packet
// and a second admission. The nodes have no UDP port: what played went
// over TCP.
func TestDefaultTransportsThroughFrontDoorToTCPOnlyNodes(t *testing.T) {
	t.Parallel()
	needTool(t, "ffmpeg")
	gst := needTool(t, "gst-launch-1.0")
	c := startPlaybackCluster(t, 2, 100_000_000, func(n *vodnode.Node) { n.TCPOnly = true })
	adm := c.admin(t)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		p := ffmpegRun(t, 3, "-i", c.frontURL("demo", "demo", "sample-004")) // no -rtsp_transport
		if p.Frames < 50 {
			t.Errorf("ffmpeg with its default transports: %d frames (%v)\n%s", p.Frames, p.Err, p.Out)
		}
	}()
	go func() {
		defer wg.Done()
		out, took, timedOut, err := gstPlay(gst, 60*time.Second, "sync=false", "location="+c.frontURL("", "", "sample-005"), "user-id=demo", "user-pw=demo")
		switch {
		case timedOut:
			t.Errorf("gst-launch-1.0: still running after %v:\n%s", took, out)
		case strings.Contains(out, "Retrying using a tcp connection"):
			t.Errorf("rtspsrc waited for UDP packets before it set up over TCP:\n%s", out)
		case err != nil && !gstRace(out), !strings.Contains(out, "Got EOS"):
			t.Errorf("gst-launch-1.0 with rtspsrc's default protocols: exit %v after %v, want the title played to its end:\n%s", err, took, out)
		}
	}()
	wg.Wait()
	eventually(t, 15*time.Second, "no session or reservation left", func() bool {
		return len(sessions(t, adm)) == 0 && reservedBps(t, adm) == 0
	})
}
