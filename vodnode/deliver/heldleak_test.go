package deliver

import (
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/pion/rtcp"
)

// frameLog records what a client connection received, from its own
// goroutine: the last RTP packet's arrival, and the NTP time of every
// sender report.
type frameLog struct {
	mu      sync.Mutex
	lastRTP time.Time
	srNTP   []float64
	done    chan struct{}
}

func logFrames(c net.Conn) *frameLog {
	l := &frameLog{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		buf := make([]byte, 65536)
		for {
			ch, b, err := nextFrame(c, buf)
			if err != nil {
				return // the test closed the connection
			}
			l.mu.Lock()
			if ch%2 == 0 {
				l.lastRTP = time.Now()
			} else if ps, err := rtcp.Unmarshal(b); err == nil {
				for _, p := range ps {
					if sr, ok := p.(*rtcp.SenderReport); ok {
						l.srNTP = append(l.srNTP, ntpSeconds(sr.NTPTime))
					}
				}
			}
			l.mu.Unlock()
		}
	}()
	return l
}

// reportsAfter returns how many sender reports were made after t (by
// their NTP time).
func (l *frameLog) reportsAfter(t time.Time) int {
	at := ntpSeconds(ntpTime(t))
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, v := range l.srNTP {
		if v > at {
			n++
		}
	}
	return n
}

func (l *frameLog) sentRTP() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.lastRTP.IsZero()
}

// TestHeldStreamsLeaveNothingBehind: MP2T and elementary streams over
// TCP, paused or waiting for their title's fill (sending their sender
// reports while held: ESStream's report loop, Stream's idle report
// timer), then closed: none sends a report made after its Close returned,
// and the goroutines the plays started are all gone.
func TestHeldStreamsLeaveNothingBehind(t *testing.T) {
	const interval = 50 * time.Millisecond
	e := startEngineSR(t, interval)
	data := loadClip(t)
	tr, err := ProbeES(t.Context(), newMemSource(data))
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	type play struct {
		close   func()
		held    func() // pauses, or nothing (waiting for the fill)
		log     *frameLog
		conns   [2]net.Conn
		closeAt time.Time
	}
	var plays []*play
	const each = 6
	for k := range 4 * each {
		es, fill := k%2 == 1, k/2%2 == 1
		src := newMemSource(data)
		if fill {
			src = newFillingSource(data)
			src.reveal(len(data) / 20)
		}
		srv, cli := tcpPair(t)
		p := &play{log: logFrames(cli), conns: [2]net.Conn{srv, cli}}
		w := NewConnWriter(srv, 0, 0)
		if es {
			st, err := e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPTCP, Conn: w, Channel: [2]int{0, 2}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Seek(0); err != nil {
				t.Fatal(err)
			}
			st.Resume()
			p.close, p.held = st.Close, func() { st.Pause() }
			if fill {
				p.held = func() {}
			}
		} else {
			st, err := e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: w, SSRC: uint32(k)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Play(0); err != nil {
				t.Fatal(err)
			}
			// Closed, its idle report's timer is stopped: it does not
			// keep the stream until it fires.
			p.close, p.held = func() {
				st.Close()
				st.mu.Lock()
				defer st.mu.Unlock()
				if st.idleTimer != nil {
					t.Errorf("play %d: an idle report still due after Close", k)
				}
			}, func() { st.Pause() }
			if fill {
				p.held = func() {}
			}
		}
		plays = append(plays, p)
	}
	waitUntil(t, 10*time.Second, "RTP on every play", func() bool {
		for _, p := range plays {
			if !p.log.sentRTP() {
				return false
			}
		}
		return true
	})
	for _, p := range plays {
		p.held()
	}
	// Held (or caught up with the fill, which sent a twentieth of the
	// clip): each goes on reporting with nothing to send.
	waitUntil(t, 15*time.Second, "a sender report from every play after its RTP stopped", func() bool {
		for _, p := range plays {
			p.log.mu.Lock()
			last := p.log.lastRTP
			p.log.mu.Unlock()
			if time.Since(last) < 4*interval || p.log.reportsAfter(last.Add(2*interval)) == 0 {
				return false
			}
		}
		return true
	})
	for _, p := range plays {
		p.close()
		p.closeAt = time.Now()
	}
	// Any report made after Close would be on its way within a few
	// intervals: the connections stay open for them.
	time.Sleep(6 * interval)
	for k, p := range plays {
		if n := p.log.reportsAfter(p.closeAt); n > 0 {
			t.Errorf("play %d: %d sender reports made after its Close", k, n)
		}
		p.conns[0].Close()
		p.conns[1].Close()
		<-p.log.done
	}
	waitUntil(t, 10*time.Second, "the plays' goroutines to end", func() bool {
		return runtime.NumGoroutine() <= before
	})
}

// waitUntil polls cond every 10 ms until it holds, failing the test after d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			buf := make([]byte, 1<<20)
			t.Fatalf("waited %v for %s (%d goroutines)\n%s", d, what, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
	}
}
