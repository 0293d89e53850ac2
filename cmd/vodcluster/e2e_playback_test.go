package main

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"vodcluster/cmd/internal/probe"
	"vodcluster/vodnode"
)

// TestTimeoutReleasesReservation: nodes with a 2 s session timeout (the
// default is 60 s). A viewer that keeps its session alive with
// GET_PARAMETER plays on through three timeouts; viewers that go silent,
// over TCP (connection still open) and over UDP, are closed by their node
// after one, and the manager releases their reservations.
func TestTimeoutReleasesReservation(t *testing.T) {
	t.Parallel()
	c := startPlaybackCluster(t, 1, 100_000_000, func(n *vodnode.Node) { n.SessionTimeout = 2 * time.Second })
	adm := c.admin(t)
	type viewer struct {
		r     *rtspc
		loc   string
		id    string
		alive bool
	}
	var vs []*viewer
	// The kept-alive viewer's GET_PARAMETERs start right after its PLAY
	// (the other viewers' setups can take longer than its 2 s timeout on a
	// loaded machine) and go on until three timeouts after all three
	// play.
	until := make(chan time.Time, 1)
	kept := make(chan error, 1)
	for i, tr := range []string{"RTP/AVP/TCP;unicast", "RTP/AVP/TCP;unicast", "RTP/AVP;unicast;client_port=%d-%d"} {
		v := &viewer{loc: redirect(t, c, fmt.Sprintf("sample-00%d", i+1)), alive: i == 0}
		u, _ := url.Parse(v.loc)
		v.r = dialRTSPC(t, u.Host, "", "")
		if strings.Contains(tr, "%d") {
			p, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			port := p.LocalAddr().(*net.UDPAddr).Port
			tr = fmt.Sprintf(tr, port, port+1)
		}
		res := v.r.do("SETUP", v.loc+"/trackID=0", "Transport", tr)
		if res.StatusCode != 200 || !strings.HasSuffix(res.Header["Session"][0], ";timeout=2") {
			t.Fatalf("SETUP %s: %d %v", tr, res.StatusCode, res.Header["Session"])
		}
		v.id = sessionOf(res)
		if res := v.r.do("PLAY", v.loc+"/", "Session", v.id); res.StatusCode != 200 {
			t.Fatalf("PLAY: %d", res.StatusCode)
		}
		go io.Copy(io.Discard, v.r.br) // media and keepalive answers
		vs = append(vs, v)
		if v.alive {
			go func() { kept <- keepAlive(v.r, v.loc, v.id, until) }()
		}
	}
	eventually(t, 5*time.Second, "three sessions playing", func() bool {
		n := 0
		for _, s := range sessions(t, adm) {
			if s.State == "playing" {
				n++
			}
		}
		return n == 3
	})
	until <- time.Now().Add(6 * time.Second)
	if err := <-kept; err != nil {
		t.Fatalf("keepalive: %v", err)
	}
	table := sessions(t, adm)
	if len(table) != 1 {
		t.Fatalf("after three timeouts the manager holds %d sessions, want the one kept alive", len(table))
	}
	for _, s := range table {
		if s.State != "playing" || !strings.Contains(vs[0].loc, "/"+s.TitleId) || reservedBps(t, adm) != s.BitrateBps {
			t.Errorf("left: %+v and %d bit/s reserved, want the session kept alive and its bitrate", s, reservedBps(t, adm))
		}
	}
	eventually(t, 15*time.Second, "the last session timed out and released", func() bool {
		return len(sessions(t, adm)) == 0 && reservedBps(t, adm) == 0
	})
}

// keepAlive sends r's session id a GET_PARAMETER every 500 ms (a quarter
// of the 2 s timeout) until the time it is given on until has passed.
func keepAlive(r *rtspc, loc, id string, until <-chan time.Time) error {
	var end time.Time // zero until given
	for end.IsZero() || time.Now().Before(end) {
		if err := r.write("GET_PARAMETER", loc+"/", "Session", id); err != nil {
			return err
		}
		select {
		case end = <-until:
		case <-time.After(500 * time.Millisecond): // the keepalive period
		}
	}
	return nil
}

// TestCapacityRefusesNextViewer: a node with egress for three viewers of
// the 600 kbit/s samples. Three ffmpeg viewers play; the fourth request is
// refused by the front door with 453 Not Enough Bandwidth (after the
// queue deadline) instead of being squeezed in, and the three play on
// undisturbed: every frame, in real time.
func TestCapacityRefusesNextViewer(t *testing.T) {
	t.Parallel()
	c := startPlaybackCluster(t, 1, 3*600_000+100_000, nil)
	adm := c.admin(t)
	plays := make([]ffmpegPlay, 3)
	var wg sync.WaitGroup
	for i, tr := range []string{"tcp", "udp", "tcp"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			plays[i] = runFFmpeg(t, c.frontURL("demo", "demo", fmt.Sprintf("sample-00%d", i+1)), tr, 6)
		}()
	}
	eventually(t, 15*time.Second, "three sessions playing", func() bool {
		n := 0
		for _, s := range sessions(t, adm) {
			if s.State == "playing" {
				n++
			}
		}
		return n == 3
	})
	out, took := rtspStatus(t, c.frontURL("demo", "demo", "sample-004"))
	if !strings.Contains(out, "453") || took < time.Second {
		t.Errorf("fourth viewer: refused after %v, want 453 after the 1 s queue deadline:\n%s", took, out)
	}
	if n := len(sessions(t, adm)); n != 3 {
		t.Errorf("%d sessions after the refusal, want 3", n)
	}
	wg.Wait()
	for i, p := range plays {
		if p.Err != nil || p.Frames < 148 || p.Frames > 152 || p.Wall < 5*time.Second {
			t.Errorf("viewer %d: %v, %d frames of 150 in %v\n%s", i, p.Err, p.Frames, p.Wall, p.Out)
		}
	}
}

// TestOneRedirectOneViewer: four ffmpeg players started at once on the
// node URL of one 302 (one admission, one reservation): one plays, the
// others are refused 401 by the node.
func TestOneRedirectOneViewer(t *testing.T) {
	t.Parallel()
	c := startPlaybackCluster(t, 1, 100_000_000, nil)
	adm := c.admin(t)
	loc := redirect(t, c, "sample-005")
	plays := make([]ffmpegPlay, 4)
	var wg sync.WaitGroup
	for i := range plays {
		wg.Add(1)
		go func() {
			defer wg.Done()
			plays[i] = runFFmpeg(t, loc, "tcp", 3)
		}()
	}
	wg.Wait()
	played, refused := 0, 0
	for _, p := range plays {
		switch {
		case p.Err == nil && p.Frames >= 70:
			played++
		case p.Err != nil && strings.Contains(p.Out, "401"):
			refused++
		}
	}
	if played != 1 || refused != 3 {
		for _, p := range plays {
			t.Logf("%v, %d frames:\n%s", p.Err, p.Frames, p.Out)
		}
		t.Fatalf("%d played, %d refused 401; want one and three", played, refused)
	}
	if n := len(sessions(t, adm)); n > 1 {
		t.Errorf("%d sessions for one admission", n)
	}
}

// TestRefusedSetupReleasedAtOnce: a redirected client whose SETUP the
// node refuses (461: no transport it serves) and that gives up: the node
// reports the refusal and the manager releases the reservation within
// seconds, not at its no-show timeout (token lifetime + grace, 70 s).
func TestRefusedSetupReleasedAtOnce(t *testing.T) {
	t.Parallel()
	c := startPlaybackCluster(t, 1, 100_000_000, nil)
	adm := c.admin(t)
	loc := redirect(t, c, "sample-006")
	if n, bps := len(sessions(t, adm)), reservedBps(t, adm); n != 1 || bps == 0 {
		t.Fatalf("after the 302: %d sessions, %d bit/s reserved", n, bps)
	}
	u, _ := url.Parse(loc)
	r := dialRTSPC(t, u.Host, "", "")
	if res := r.do("SETUP", loc+"/trackID=0", "Transport", "RTP/SAVP;unicast;client_port=5000-5001"); res.StatusCode != 461 {
		t.Fatalf("SETUP: %d, want 461", res.StatusCode)
	}
	r.c.Close()
	eventually(t, 15*time.Second, "the refused session released", func() bool {
		return len(sessions(t, adm)) == 0 && reservedBps(t, adm) == 0
	})
}

// TestElementaryStreamsThroughFrontDoor: a player that asks the front door
// for rtsp://front/vod/<title>/es gets the title as H.264 and AAC tracks
// (not one MP2T track) and plays them.
func TestElementaryStreamsThroughFrontDoor(t *testing.T) {
	t.Parallel()
	c := startPlaybackCluster(t, 1, 100_000_000, nil)
	out, _ := rtspStatus(t, c.frontURL("demo", "demo", "sample-018/es"))
	// an MP2T track would show as a program with stream types ([27]: H.264)
	if !strings.Contains(out, "Video: h264") || !strings.Contains(out, "Audio: aac") || strings.Contains(out, "Program") || strings.Contains(out, "[27]") {
		t.Errorf("ffprobe of the ES URL:\n%s", out)
	}
	p := runFFmpeg(t, c.frontURL("demo", "demo", "sample-019/es"), "udp", 3)
	if p.Err != nil || p.Frames < 70 || p.Frames > 80 {
		t.Errorf("ES over UDP: %v, %d frames in 3 s\n%s", p.Err, p.Frames, p.Out)
	}
	// vodctl play's client counts the tracks' access units (25 fps video,
	// ~47 AAC frames a second at 48 kHz) and the media's seconds by the
	// video's RTP clock.
	res, err := probe.PlayContext(c.frontURL("demo", "demo", "sample-017/es"), probe.Options{Duration: 3 * time.Second})
	if err != nil || res.VideoFrames < 55 || res.VideoFrames > 80 || res.AudioFrames < 90 || res.MediaSeconds < 2.2 || res.MediaSeconds > 3.2 {
		t.Errorf("probe of the ES URL: %v, %+v", err, res)
	}
}
