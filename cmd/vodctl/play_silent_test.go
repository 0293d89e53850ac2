package main

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4"
	"github.com/bluenviron/gortsplib/v4/pkg/description"
	"github.com/bluenviron/gortsplib/v4/pkg/format"

	"vodcluster/cmd/internal/probe"
)

// startSilentServer serves an MPEG-TS stream over RTSP (TCP) on loopback
// that never sends a packet, as a node filling a title sends nothing
// until the origin's first bytes (after its setup delay, 2 s in the
// example cdp.yaml); it returns its address.
func startSilentServer(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &tsServer{played: make(chan struct{}), teardown: make(chan struct{})}
	s.srv = &gortsplib.Server{Handler: s, RTSPAddress: lis.Addr().String(),
		Listen: func(string, string) (net.Listener, error) { return lis, nil }}
	if err := s.srv.Start(); err != nil {
		t.Fatal(err)
	}
	medi := &description.Media{Type: description.MediaTypeVideo, Formats: []format.Format{&format.MPEGTS{}}}
	s.stream = &gortsplib.ServerStream{Server: s.srv, Desc: &description.Session{Medias: []*description.Media{medi}}}
	if err := s.stream.Initialize(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.stream.Close()
		s.srv.Close()
	})
	return lis.Addr().String()
}

// A play that receives nothing in its --duration says so, with the
// duration and what to do: against a node filling the title with the
// example origin (setup_delay 2s), `vodctl play --duration 2s` printed
// "0.00 s of media in 0.00 s" and "no video frame received", as if the
// stream had ended at once, with no word of the wait or of --duration.
func TestPlayNothingReceivedSaysWhy(t *testing.T) {
	addr := startSilentServer(t)
	cmd := newRoot()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&strings.Builder{})
	cmd.SetArgs([]string{"play", "--duration", "500ms", "rtsp://" + addr + "/vod/sample-001"})
	err := cmd.Execute()
	if err == nil {
		t.Fatalf("a play that received nothing succeeded:\n%s", out.String())
	}
	for _, want := range []string{"no video frame received", "nothing came in 500ms of play", "--duration", "vodctl fills"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q: want %q in it", err, want)
		}
	}
}

// A play that received nothing prints no figure line before its error:
// it printed "played ...: 0 video frames, 0 audio frames, 0.00 s of media
// in 0.00 s (0.00x real time), 0 kbit/s", as if the stream had ended at
// once, above the error that says nothing came in the time played. With
// --json the result is still printed (a script reads its fields).
func TestPlayNothingReceivedPrintsNoFigures(t *testing.T) {
	addr := startSilentServer(t)
	for _, asJSON := range []bool{false, true} {
		cmd := newRoot()
		var out strings.Builder
		cmd.SetOut(&out)
		cmd.SetErr(&strings.Builder{})
		args := []string{"play", "--duration", "300ms", "rtsp://" + addr + "/vod/sample-001"}
		if asJSON {
			args = append([]string{"--json"}, args...)
		}
		cmd.SetArgs(args)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), "nothing came in 300ms of play") {
			t.Fatalf("a play that received nothing (json %v): %v\n%s", asJSON, err, out.String())
		}
		switch {
		case !asJSON && out.String() != "":
			t.Errorf("a play that received nothing printed figures before its error:\n%s", out.String())
		case asJSON && !strings.Contains(out.String(), `"videoFrames": 0`):
			t.Errorf("--json play that received nothing: want its result:\n%s", out.String())
		}
	}
}

// printPlay prints the figures of a play that received bytes but no
// video frame (a title without video: its audio frames and bit/s say
// something), and nothing for people when no byte came.
func TestPrintPlayNothingCame(t *testing.T) {
	var b strings.Builder
	printPlay(&b, probe.Result{URL: "rtsp://x/vod/t", WallSeconds: 1}, false)
	if b.String() != "" {
		t.Fatalf("no byte: %q", b.String())
	}
	printPlay(&b, probe.Result{URL: "rtsp://x/vod/t", Bytes: 1316, AudioFrames: 3, WallSeconds: 1}, false)
	if !strings.Contains(b.String(), "3 audio frames") {
		t.Fatalf("bytes, no video: %q", b.String())
	}
}

// A play to the end (--duration 0) that received nothing is not told to
// play longer with --duration: it played as long as the stream lasted.
func TestPlayNothingToTheEndSaysNoLonger(t *testing.T) {
	err := noVideo(probe.Result{}, 0)
	if err == nil || strings.Contains(err.Error(), "--duration") || !strings.Contains(err.Error(), "nothing came before the stream ended") {
		t.Fatalf("no byte in a play to the end: %v", err)
	}
	if err := noVideo(probe.Result{}, 2*time.Second); err == nil || !strings.Contains(err.Error(), "nothing came in 2s of play") || !strings.Contains(err.Error(), "--duration") {
		t.Fatalf("no byte in 2s of play: %v", err)
	}
}

// A play its own limit (--duration + 30 s, 300ms here) stops before the
// server answered is one plain line naming the limit and the request it
// waited on: it said "stopped before PLAY's answer (context deadline
// exceeded): DESCRIBE: terminated", the library's words. Exit status 1.
func TestPlayStoppedByItsLimitSaysSo(t *testing.T) {
	defer func(s time.Duration) { playSlack = s }(playSlack)
	playSlack = 300 * time.Millisecond
	addr, _ := serveSilent(t)
	var out, errOut strings.Builder
	code := run([]string{"play", "--duration", "200ms", "rtsp://demo:demo@" + addr + "/vod/sample-001"}, &out, &errOut)
	const want = "vodctl: play stopped: no end of stream within --duration + 300ms (500ms); it was waiting for the answer to DESCRIBE (nothing played)\n"
	if code != 1 || errOut.String() != want || out.String() != "" {
		t.Fatalf("play stopped by its limit: exit status %d, standard error %q, output %q; want 1 and %q", code, errOut.String(), out.String(), want)
	}
}
