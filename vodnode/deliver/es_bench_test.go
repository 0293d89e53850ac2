package deliver

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// BenchmarkESStreams is the CPU an elementary-stream viewer costs, in real
// time: each iteration plays a second of a 4 Mbit/s title (H.264 and AAC,
// demultiplexed, packetised and sent each at its own time) to 50 viewers
// over TCP with writes that cost nothing. It reports CPU milliseconds per
// viewer-second (process time, all goroutines) and what one core could
// carry at that cost. Compare BenchmarkPacerTCP for MP2T viewers.
func BenchmarkESStreams(b *testing.B) {
	const viewers = 50
	data := loadClip4M(b)
	src := newMemSource(data)
	e := &Engine{Shards: 1}
	if err := e.Start(); err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	tr, err := ProbeES(context.Background(), src)
	if err != nil {
		b.Fatal(err)
	}
	w := NewConnWriter(discardConn{}, 0, 0)
	var streams []*ESStream
	for i := range viewers {
		st, err := e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPTCP, Conn: w, Channel: [2]int{0, 2}})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		if _, err := st.Seek(float64(i%8) + 0.5); err != nil { // spread over the title
			b.Fatal(err)
		}
		streams = append(streams, st)
	}
	for _, st := range streams {
		st.Resume()
	}
	time.Sleep(time.Second) // past the read-ahead burst of the start
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		time.Sleep(time.Second) // the benchmark is real time: a second of play
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	perViewerSecond := cpu.Seconds() * 1000 / float64(viewers*b.N)
	b.ReportMetric(perViewerSecond, "cpu-ms/viewer-s")
	b.ReportMetric(1000/perViewerSecond, "viewers/core")
}

// cpuTime returns the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
