package vodnode

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4"
	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/prometheus/client_golang/prometheus"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/vodnode/deliver"
	"vodcluster/vodnode/store"
)

// TestRTSPDiskReadError: a title's file cut short on disk under a playing
// RTSP stream (its reads fail where the file ends, before the end of its
// index), in MP2T and elementary-stream mode, over TCP and UDP: the
// stream ends there, and the read error is counted in
// vodnode_disk_read_errors_total, as an HTTP send's is, and logged at
// warning naming the title and the session; the session's ENDED event
// says "disk-read-error", and the client is told with an RTCP BYE
// carrying that reason on each track. gortsplib's client sees the BYE;
// ffmpeg stops at it (exit 0, before the title's end), not waiting in
// silence. (Such a stream ended with reason "error", uncounted, unlogged
// but for the session's end at info, and over TCP with no BYE.)
func TestRTSPDiskReadError(t *testing.T) {
	t.Parallel() // real-time bound: about 6 s
	o := newFakeOrigin(t)
	m, maddr := startFastManager(t)
	var log logtest.Buffer
	n := startNode(t, startOrigin(t, o), func(n *Node) {
		n.ManagerAddr = maddr
		n.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	const reason = string(deliver.EndDiskRead)
	// cutUnder waits for sid's session to play its title, filled whole,
	// and cuts the title's file to its first 3 s; it returns the
	// session's RTSP id.
	cutUnder := func(t *testing.T, sid, title string) string {
		t.Helper()
		var s *session
		waitFor(t, 10*time.Second, "the session playing its title, filled", func() bool {
			n.mu.Lock()
			defer n.mu.Unlock()
			for _, x := range n.sessions {
				if x.sid == sid && x.started {
					s = x
				}
			}
			return s != nil && s.t().View().Complete
		})
		cut := int64(len(o.titles[title])*3/20) / 188 * 188
		if err := os.Truncate(filepath.Join(n.DataDir, "titles", title+".ts"), cut); err != nil {
			t.Fatal(err)
		}
		return s.id
	}
	// ended waits for sid's ENDED event and checks its reason, and the
	// warning logged for its session.
	ended := func(t *testing.T, sid, title, id string) {
		t.Helper()
		var e *pb.SessionEvent
		waitFor(t, 15*time.Second, "ENDED reported", func() bool {
			e = m.event(sid, pb.SessionEvent_KIND_ENDED)
			return e != nil
		})
		if e.GetReason() != reason {
			t.Errorf("ENDED reason %q, want %q", e.GetReason(), reason)
		}
		if e.GetBytesSent() <= 0 {
			t.Errorf("ENDED with %d bytes sent", e.GetBytesSent())
		}
		var warning string
		for _, l := range strings.Split(log.String(), "\n") {
			if strings.Contains(l, "level=WARN") && strings.Contains(l, "session="+id) {
				warning = l
			}
		}
		for _, want := range []string{`msg="reading a title's file failed during an RTSP stream`, "title=" + title, "sid=" + sid, `err="unexpected EOF"`} {
			if !strings.Contains(warning, want) {
				t.Errorf("the warning for session %s lacks %s: %q", id, want, warning)
			}
		}
		// The copy cut short is dropped, to be filled again for the
		// title's next viewer (TestCopyCutShortIsFilledAgain).
		waitFor(t, 10*time.Second, "the copy cut short dropped", func() bool {
			return !slices.ContainsFunc(n.store.Titles(), func(st store.Status) bool { return st.ID == title })
		})
	}
	var i int
	next := func() (int, string) {
		i++
		return i, "sample-00" + string(rune('0'+i))
	}
	t.Run("clients", func(t *testing.T) {
		for _, mode := range []string{"mp2t", "es"} {
			for _, tr := range []gortsplib.Transport{gortsplib.TransportTCP, gortsplib.TransportUDP} {
				_, title := next()
				t.Run("gortsplib-"+mode+"-"+tr.String(), func(t *testing.T) {
					t.Parallel()
					sid := "diskread-g-" + mode + "-" + tr.String()
					tok := mint(t, sid, title, "node-1", "", time.Minute)
					url := nodeURL(n, tok, title)
					if mode == "es" {
						url = esURL(n, tok, title)
					}
					u, err := base.ParseURL(url)
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
					if err := c.SetupAll(desc.BaseURL, desc.Medias); err != nil {
						t.Fatal(err)
					}
					type bye struct {
						track  int
						reason string
					}
					byes := make(chan bye, 16)
					for i, md := range desc.Medias {
						c.OnPacketRTP(md, md.Formats[0], func(*rtp.Packet) {})
						c.OnPacketRTCP(md, func(p rtcp.Packet) {
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
					id := cutUnder(t, sid, title)
					timeout := time.After(20 * time.Second)
					for got := map[int]bool{}; len(got) < len(desc.Medias); {
						select {
						case b := <-byes:
							if b.reason != reason {
								t.Fatalf("track %d: BYE reason %q, want %q", b.track, b.reason, reason)
							}
							got[b.track] = true
						case <-timeout:
							t.Fatalf("RTCP BYE on %d tracks: got %v", len(desc.Medias), got)
						}
					}
					ended(t, sid, title, id)
				})
			}
		}
		if _, err := exec.LookPath("ffmpeg"); err != nil {
			t.Log("ffmpeg not installed: its runs skipped")
			return
		}
		for _, mode := range []string{"mp2t", "es"} {
			for _, tr := range []string{"tcp", "udp"} {
				_, title := next()
				t.Run("ffmpeg-"+mode+"-"+tr, func(t *testing.T) {
					t.Parallel()
					sid := "diskread-f-" + mode + "-" + tr
					tok := mint(t, sid, title, "node-1", "", time.Minute)
					url := nodeURL(n, tok, title)
					if mode == "es" {
						url = esURL(n, tok, title)
					}
					ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
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
					type result struct {
						frames int
						err    error
					}
					done := make(chan result, 1)
					var wg sync.WaitGroup
					wg.Add(1)
					go func() {
						defer wg.Done()
						frames := 0
						sc := bufio.NewScanner(out)
						for sc.Scan() {
							if len(sc.Bytes()) > 0 && sc.Bytes()[0] != '#' {
								frames++
							}
						}
						done <- result{frames, cmd.Wait()}
					}()
					defer wg.Wait()
					id := cutUnder(t, sid, title)
					ended(t, sid, title, id)
					select {
					case r := <-done:
						if r.err != nil {
							t.Fatalf("ffmpeg: %v\n%s", r.err, stderr.String())
						}
						if whole := bytesFrames(t, "0:a", o.titles[title]); r.frames == 0 || r.frames >= whole/2 {
							t.Errorf("ffmpeg decoded %d audio frames of a title of %d cut at 15%%", r.frames, whole)
						}
					case <-time.After(10 * time.Second):
						cancel()
						t.Fatalf("ffmpeg still playing 10 s after the session ended: no BYE reached it\n%s", stderr.String())
					}
				})
			}
		}
	})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(nodeCollector{n})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := float64(i)
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		want = 4
	}
	var got float64 = -1
	for _, mf := range mfs {
		if mf.GetName() == "vodnode_disk_read_errors_total" {
			got = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	if got != want {
		t.Errorf("vodnode_disk_read_errors_total %v after %v streams cut short", got, want)
	}
}
