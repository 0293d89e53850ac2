package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"vodcluster/acm"
	v1 "vodcluster/proto/vodcluster/v1"
)

// The end-to-end tests run the whole cluster in this process on loopback
// (origin with the sample titles, manager, nodes) and play through the
// front door with ffmpeg and ffprobe.

// TestPlayThroughFrontDoor: ffmpeg plays 4 s of a title over TCP and over
// UDP: about 100 decoded video frames (25 fps), delivered in real time.
func TestPlayThroughFrontDoor(t *testing.T) {
	c := startTestCluster(t, 3, 100_000_000, nil)
	for i, tr := range []string{"tcp", "udp"} {
		t.Run(tr, func(t *testing.T) {
			title := fmt.Sprintf("sample-00%d", i+1)
			p := runFFmpeg(t, c.frontURL("demo", "demo", title), tr, 4)
			if p.Err != nil {
				t.Fatalf("ffmpeg: %v\n%s", p.Err, p.Out)
			}
			if p.Frames < 95 || p.Frames > 105 {
				t.Fatalf("decoded %d video frames in 4 s, want about 100\n%s", p.Frames, p.Out)
			}
			// Real-time pacing: 4 s of media cannot arrive much faster than
			// 4 s minus the mux's PCR-to-PTS lead (0.7 s in ffmpeg's muxer).
			if p.Wall < 3*time.Second || p.Wall > 12*time.Second {
				t.Fatalf("4 s of media took %v of wall time: not real time", p.Wall)
			}
		})
	}
}

// TestFillOnceThenLocality: the first play of a title no node holds fills
// it from the origin exactly once; the second play goes to the node that
// now holds it and costs the origin nothing.
func TestFillOnceThenLocality(t *testing.T) {
	c := startTestCluster(t, 3, 100_000_000, nil)
	const title = "sample-007"
	if n := c.origin.Stats().TitleTransfers[title]; n != 0 {
		t.Fatalf("origin fetched %s %d times before any play", title, n)
	}
	p := runFFmpeg(t, c.frontURL("demo", "demo", title), "tcp", 3)
	if p.Err != nil || p.Frames < 70 {
		t.Fatalf("first play: %v, %d frames\n%s", p.Err, p.Frames, p.Out)
	}
	// The fill runs on at the origin's rate after the viewer left.
	eventually(t, 20*time.Second, "the fill to complete", func() bool { return len(c.holders(title)) == 1 })
	holder := c.holders(title)[0]
	if n := c.origin.Stats().TitleTransfers[title]; n != 1 {
		t.Fatalf("origin transfers of %s after the first play: %d, want 1", title, n)
	}

	// Second play: watch the session table while it plays.
	adm := c.admin(t)
	done := make(chan ffmpegPlay, 1)
	go func() { done <- runFFmpeg(t, c.frontURL("demo", "demo", title), "udp", 3) }()
	var placed string
	eventually(t, 15*time.Second, "the second session in the session table", func() bool {
		r, err := adm.ListSessions(context.Background(), &v1.ListSessionsRequest{})
		if err != nil {
			return false
		}
		for _, s := range r.Sessions {
			if s.TitleId == title {
				placed = s.NodeId
				return true
			}
		}
		return false
	})
	p2 := <-done
	if p2.Err != nil || p2.Frames < 70 {
		t.Fatalf("second play: %v, %d frames\n%s", p2.Err, p2.Frames, p2.Out)
	}
	if placed != holder {
		t.Fatalf("second play placed on %s, the title is held by %s", placed, holder)
	}
	if n := c.origin.Stats().TitleTransfers[title]; n != 1 {
		t.Fatalf("origin transfers of %s after the second play: %d, want 1", title, n)
	}
	if n := c.nodeFills(title); n != 1 {
		t.Fatalf("nodes started %d fills of %s, want 1", n, title)
	}
}

// TestRefusals: wrong password 401, unknown title 404, a title outside the
// subscriber's packages 403, and a node asked without a valid admission
// token 401.
func TestRefusals(t *testing.T) {
	c := startTestCluster(t, 1, 100_000_000, nil)
	cases := []struct {
		name, url, want string
	}{
		{"wrong password", c.frontURL("demo", "wrong", "sample-001"), "401 Unauthorized"},
		{"no credentials", c.frontURL("", "", "sample-001"), "401 Unauthorized"},
		{"unknown user", c.frontURL("nobody", "x", "sample-001"), "401 Unauthorized"},
		{"unknown title", c.frontURL("demo", "demo", "no-such-title"), "404 Not Found"},
		{"outside packages", c.frontURL("basic", "basicpw", "sample-015"), "403 Forbidden"},
		{"node without token", fmt.Sprintf("rtsp://%s/vod/sample-001", c.nodes[0].RTSPAddr()), "401 Unauthorized"},
		{"node with forged token", fmt.Sprintf("rtsp://%s/s/eyJhbGciOiJIUzI1NiJ9.e30.AAAA/vod/sample-001", c.nodes[0].RTSPAddr()), "401 Unauthorized"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := rtspStatus(t, tc.url)
			if !strings.Contains(out, tc.want) {
				t.Fatalf("want %q in ffprobe's output:\n%s", tc.want, out)
			}
		})
	}
	// The subscriber of package basic plays a basic title.
	p := runFFmpeg(t, c.frontURL("basic", "basicpw", "sample-002"), "tcp", 1)
	if p.Err != nil || p.Frames < 20 {
		t.Fatalf("entitled play: %v %d frames\n%s", p.Err, p.Frames, p.Out)
	}
}

// TestFullCapacity453: with every bit/s reserved, the next request waits
// for the queue deadline and is refused with 453 Not Enough Bandwidth.
func TestFullCapacity453(t *testing.T) {
	// One node with room for one ~600 kbit/s sample title.
	c := startTestCluster(t, 1, 1_000_000, nil)
	adm := c.admin(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ff := needTool(t, "ffmpeg")
	hold := exec.CommandContext(ctx, ff, "-hide_banner", "-nostdin", "-rtsp_transport", "tcp",
		"-i", c.frontURL("demo", "demo", "sample-001"), "-t", "15", "-f", "null", "-")
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	defer hold.Wait() //nolint:errcheck // killed by cancel
	eventually(t, 15*time.Second, "the first session to play", func() bool {
		r, err := adm.ListSessions(ctx, &v1.ListSessionsRequest{})
		return err == nil && len(r.Sessions) == 1 && r.Sessions[0].State == "playing"
	})
	out, took := rtspStatus(t, c.frontURL("demo", "demo", "sample-002"))
	if !strings.Contains(out, "453") {
		t.Fatalf("want 453 Not Enough Bandwidth, ffprobe said:\n%s", out)
	}
	if took < time.Second {
		t.Fatalf("refused after %v, before the 1 s queue deadline", took)
	}
	// The refusal left no reservation: the playing session is the only one.
	r, err := adm.ListSessions(ctx, &v1.ListSessionsRequest{})
	if err != nil || len(r.Sessions) != 1 {
		t.Fatalf("sessions after the refusal: %v %v", r, err)
	}
}

// TestManagerRestartKeepsState: after the manager restarts on the same
// data directory the catalog and the session table are still there, and
// the nodes come back to it.
func TestManagerRestartKeepsState(t *testing.T) {
	c := startTestCluster(t, 2, 100_000_000, restartablePorts(t))
	adm := c.admin(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ff := needTool(t, "ffmpeg")
	hold := exec.CommandContext(ctx, ff, "-hide_banner", "-nostdin", "-rtsp_transport", "tcp",
		"-i", c.frontURL("demo", "demo", "sample-003"), "-t", "15", "-f", "null", "-")
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	defer hold.Wait() //nolint:errcheck // killed by cancel
	var sid string
	eventually(t, 15*time.Second, "the session to play", func() bool {
		r, err := adm.ListSessions(ctx, &v1.ListSessionsRequest{})
		if err == nil && len(r.Sessions) == 1 && r.Sessions[0].State == "playing" {
			sid = r.Sessions[0].SessionId
			return true
		}
		return false
	})

	old := c.manager
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	// Same data directory and addresses, no origin: the catalog must come
	// from the store.
	m := &acm.Manager{
		RTSPListen:    old.RTSPListen,
		HTTPListen:    old.HTTPListen,
		GRPCListen:    old.GRPCListen,
		DataDir:       old.DataDir,
		Secret:        c.secret,
		BOSS:          old.BOSS,
		QueueDeadline: old.QueueDeadline,
		Scheduler:     old.Scheduler,
		Logger:        quietLogger(),
	}
	m.RTSPListen, m.HTTPListen, m.GRPCListen = old.RTSPAddr(), old.HTTPAddr(), old.GRPCAddr()
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	c.manager = m
	adm = c.admin(t)
	titles, err := adm.ListTitles(ctx, &v1.ListTitlesRequest{})
	if err != nil || len(titles.Titles) != 20 {
		t.Fatalf("catalog after restart: %d titles, %v", len(titles.GetTitles()), err)
	}
	r, err := adm.ListSessions(ctx, &v1.ListSessionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range r.Sessions {
		found = found || s.SessionId == sid
	}
	if !found {
		t.Fatalf("session %s lost in the restart: %v", sid, r.Sessions)
	}
	// The nodes reconnect, the session's reservation is rebuilt on its node.
	eventually(t, 15*time.Second, "nodes to return with the reservation", func() bool {
		nr, err := adm.ListNodes(ctx, &v1.ListNodesRequest{})
		if err != nil {
			return false
		}
		alive, reserved := 0, int64(0)
		for _, n := range nr.Nodes {
			if n.Alive {
				alive++
			}
			reserved += n.ReservedBps
		}
		return alive == 2 && reserved > 0
	})
	// And a new subscriber is served by the restarted manager.
	p := runFFmpeg(t, c.frontURL("demo", "demo", "sample-004"), "tcp", 1)
	if p.Err != nil || p.Frames < 20 {
		t.Fatalf("play after restart: %v %d\n%s", p.Err, p.Frames, p.Out)
	}
}

// TestHTTPThroughFrontDoor: progressive MPEG-TS with byte ranges and HLS,
// each after the front door's authentication and a 302 to the node.
func TestHTTPThroughFrontDoor(t *testing.T) {
	c := startTestCluster(t, 2, 100_000_000, nil)
	front := c.manager.HTTPAddr()

	// Progressive: a ranged GET through the redirect returns 206 and the
	// title's bytes at that offset (the origin's copy is the reference).
	req, _ := http.NewRequest(http.MethodGet, "http://"+front+"/vod/sample-005.ts", nil)
	req.SetBasicAuth("demo", "demo")
	req.Header.Set("Range", "bytes=188000-188375")
	var hops []string
	client := &http.Client{CheckRedirect: func(r *http.Request, via []*http.Request) error {
		hops = append(hops, r.URL.Host)
		return nil
	}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent || len(body) != 376 || body[0] != 0x47 || body[188] != 0x47 {
		t.Fatalf("ranged GET: %s, %d bytes", resp.Status, len(body))
	}
	if len(hops) != 1 || hops[0] == front {
		t.Fatalf("not redirected to a node: %v", hops)
	}
	// Refusals over HTTP: wrong password 401, unknown title 404.
	for _, tc := range []struct {
		user, pw, path string
		want           int
	}{{"demo", "nope", "/vod/sample-001.ts", 401}, {"demo", "demo", "/vod/nothing.ts", 404}, {"basic", "basicpw", "/vod/sample-020.ts", 403}} {
		r, _ := http.NewRequest(http.MethodGet, "http://"+front+tc.path, nil)
		r.SetBasicAuth(tc.user, tc.pw)
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Fatalf("%s as %s: %s, want %d", tc.path, tc.user, resp.Status, tc.want)
		}
	}

	// HLS: ffmpeg reads the playlist through the front door and decodes.
	p := runFFmpegInput(t, fmt.Sprintf("http://demo:demo@%s/vod/sample-006/index.m3u8", front), 4)
	if p.Err != nil || p.Frames < 95 {
		t.Fatalf("HLS: %v, %d frames\n%s", p.Err, p.Frames, p.Out)
	}
}

// TestSessionRecordOfARealPlay: a viewer's play through the front door
// leaves one session record, with the bytes the node sent and the seconds
// played.
func TestSessionRecordOfARealPlay(t *testing.T) {
	records := filepath.Join(t.TempDir(), "sessions.jsonl")
	c := startTestCluster(t, 1, 100_000_000, func(o *clusterOptions) { o.SessionRecordsFile = records })
	if p := runFFmpeg(t, c.frontURL("demo", "demo", "sample-002"), "tcp", 2); p.Err != nil || p.Frames < 45 {
		t.Fatalf("play: %v, %d frames\n%s", p.Err, p.Frames, p.Out)
	}
	var rec struct {
		User, Title, Node, Protocol, Reason string
		PlayedS                             float64 `json:"played_s"`
		BytesSent                           int64   `json:"bytes_sent"`
	}
	eventually(t, 10*time.Second, "the play's session record", func() bool {
		b, err := os.ReadFile(records)
		return err == nil && len(b) > 0 && json.Unmarshal(b, &rec) == nil
	})
	// 2 s of a 600 kbit/s title (plus what the node sends ahead) is at
	// least 150 kB.
	if rec.User != "demo" || rec.Title != "sample-002" || rec.Node != "node-1" || rec.Protocol != "rtsp" ||
		rec.BytesSent < 150_000 || rec.PlayedS <= 0 || rec.Reason == "" {
		t.Fatalf("record %+v", rec)
	}
}

// TestOperatorCutsOffASubscriber: while ffmpeg plays a 20 s title, the
// operator ends the subscriber's sessions (vodctl sessions end --user):
// ffmpeg stops long before the title's end (the node's RTCP BYE), the
// manager holds no session of it, and the session record says why, with
// the bytes the node sent.
func TestOperatorCutsOffASubscriber(t *testing.T) {
	records := filepath.Join(t.TempDir(), "sessions.jsonl")
	c := startTestCluster(t, 1, 100_000_000, func(o *clusterOptions) { o.SessionRecordsFile = records })
	adm := c.admin(t)
	done := make(chan ffmpegPlay, 1)
	go func() { done <- runFFmpeg(t, c.frontURL("demo", "demo", "sample-003"), "tcp", 18) }()
	eventually(t, 15*time.Second, "the viewer playing (100 kB sent)", func() bool {
		ls, err := adm.ListSessions(context.Background(), &v1.ListSessionsRequest{User: "demo"})
		return err == nil && len(ls.GetSessions()) == 1 && ls.GetSessions()[0].GetState() == "playing" && c.nodes[0].Stats().BytesSent > 100_000
	})
	res, err := adm.EndSessions(context.Background(), &v1.EndSessionsRequest{User: "demo", Reason: "account suspended"})
	if err != nil || len(res.GetSessionIds()) != 1 {
		t.Fatalf("EndSessions: %v %v", res, err)
	}
	var p ffmpegPlay
	select {
	case p = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("ffmpeg still running 30 s after its session was ended")
	}
	if p.Wall > 12*time.Second {
		t.Fatalf("ffmpeg played on for %v after its session was ended (18 s asked)\n%s", p.Wall, p.Out)
	}
	var rec struct {
		Reason    string
		BytesSent int64 `json:"bytes_sent"`
	}
	eventually(t, 15*time.Second, "the cut session's record", func() bool {
		b, err := os.ReadFile(records)
		return err == nil && len(b) > 0 && json.Unmarshal(b, &rec) == nil
	})
	if rec.Reason != "ended by the operator: account suspended" || rec.BytesSent == 0 {
		t.Fatalf("record %+v", rec)
	}
}
