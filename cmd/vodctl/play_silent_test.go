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
