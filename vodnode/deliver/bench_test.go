package deliver

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"vodcluster/cdp/tsindex"
)

var (
	clip4MOnce sync.Once
	clip4M     []byte
	clip4MErr  error
)

// loadClip4M encodes (once) a 10 s, 4 Mbit/s CBR MPEG-TS clip with ffmpeg:
// the bitrate of the capacity goal.
func loadClip4M(b testing.TB) []byte {
	clip4MOnce.Do(func() {
		if _, err := exec.LookPath("ffmpeg"); err != nil {
			clip4MErr = err
			return
		}
		dir, err := os.MkdirTemp("", "clip4m")
		if err != nil {
			clip4MErr = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "clip.ts")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=25",
			"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "10",
			"-c:v", "libx264", "-preset", "ultrafast", "-b:v", "3.8M", "-minrate", "3.8M", "-maxrate", "3.8M", "-bufsize", "1M",
			"-g", "25", "-c:a", "aac", "-b:a", "96k", "-f", "mpegts", "-muxrate", "4M", out)
		if b, err := cmd.CombinedOutput(); err != nil {
			clip4MErr = err
			_ = b
			return
		}
		clip4M, clip4MErr = os.ReadFile(out)
	})
	if clip4MErr != nil {
		b.Skipf("no 4 Mbit/s clip: %v", clip4MErr)
	}
	return clip4M
}

// discardConn is a net.Conn whose writes cost nothing: it isolates the
// engine's own work (pacing, pread, packetising) from the kernel's.
type discardConn struct{ net.Conn }

func (discardConn) Write(b []byte) (int, error)      { return len(b), nil }
func (discardConn) SetWriteDeadline(time.Time) error { return nil }
func (discardConn) Close() error                     { return nil }

// benchPacer runs the pacing and packetising path of one shard for viewers
// streams of a 4 Mbit/s title, on a simulated clock advancing one Tick per
// iteration, with every stream's packets handed to mk's sink.
func benchPacer(b *testing.B, viewers int, mode Mode, cfg func(*StreamConfig)) {
	data := loadClip4M(b)
	f, err := os.CreateTemp(b.TempDir(), "t.ts")
	if err != nil {
		b.Fatal(err)
	}
	f.Write(data)
	ms := newMemSource(data)
	src := &fileSource{memSource: ms, f: f, idx: &ms.idx}
	e := &Engine{Shards: 1}
	if mode != RTPTCP {
		u, err := ListenUDP("127.0.0.1", 0)
		if err != nil {
			b.Fatal(err)
		}
		defer u.Close()
		e.UDP = u
	}
	e.init()
	sh := e.shards[0]
	newStream := func() {
		c := StreamConfig{Source: src, Mode: mode}
		cfg(&c)
		st, err := e.NewStream(c)
		if err != nil {
			b.Fatal(err)
		}
		// spread the viewers over the title
		if _, err := st.Play(float64(len(sh.active)+len(sh.pending)) * 8 / float64(viewers)); err != nil {
			b.Fatal(err)
		}
	}
	for range viewers {
		newStream()
	}
	sh.collect()
	now := e.now()
	before := e.BytesSent()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		now += int64(e.Tick)
		sh.step(now)
		for len(sh.active)+len(sh.pending) < viewers {
			newStream()
		}
		sh.collect()
	}
	b.StopTimer()
	sent := e.BytesSent() - before
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*viewers), "ns/stream-tick")
	b.ReportMetric(float64(sent)*8/b.Elapsed().Seconds()/1e6, "Mbit/s")
	// what one core could carry at this cost, in 4 Mbit/s viewers
	simulated := float64(b.N) * e.Tick.Seconds()
	b.ReportMetric(float64(viewers)*simulated/b.Elapsed().Seconds(), "viewers/core")
}

// fileSource reads from a real file (pread), like store.Title.
type fileSource struct {
	*memSource
	f   *os.File
	idx *tsindex.Index
}

func (s *fileSource) State() (*tsindex.Index, bool, error) { return s.idx, true, nil }

func (s *fileSource) ReadAt(p []byte, off int64) (int, error) { return s.f.ReadAt(p, off) }

// BenchmarkPacerTCP is the engine's work for 400 TCP viewers: pacing,
// pread, RTP packetising and interleaving, with writes that cost nothing.
func BenchmarkPacerTCP(b *testing.B) {
	w := NewConnWriter(discardConn{}, 0, 0)
	benchPacer(b, 400, RTPTCP, func(c *StreamConfig) { c.Conn = w })
}

// BenchmarkPacerUDP is the same for 400 UDP viewers, including the
// sendmmsg system calls to a loopback socket (that does not read).
func BenchmarkPacerUDP(b *testing.B) {
	sink, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Close()
	dst := sink.LocalAddr().(*net.UDPAddr)
	benchPacer(b, 400, RTPUDP, func(c *StreamConfig) { c.Dest = dst })
}
