package deliver

import (
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"vodcluster/cdp/tsindex"
)

// TestUDPStreamAfterTheNodeStalled: a node that sent nothing for 2 s (its
// sending held up: a VM paused, the process stopped) goes on over UDP at
// the stream's pace from where it was, not with the 2 s overdue at once,
// which a set-top box's jitter buffer would drop.
func TestUDPStreamAfterTheNodeStalled(t *testing.T) {
	e := startEngine(t, true)
	data := loadClip(t)
	st, rtpc := playOverUDP(t, e, newMemSource(data))
	buf := make([]byte, 2048)
	read := func(until time.Time) (bytes int) {
		for {
			rtpc.SetReadDeadline(until)
			n, _, err := rtpc.ReadFrom(buf)
			if err != nil {
				return bytes
			}
			bytes += n - 12
		}
	}
	read(time.Now().Add(time.Second)) // playing
	st.mu.Lock()                      // the node stalls: its shard waits for the stream
	stalled := 2 * time.Second
	time.Sleep(stalled)                         // the stall itself, not a wait for an event
	read(time.Now().Add(50 * time.Millisecond)) // what went before the stall
	resumed := time.Now()
	st.mu.Unlock()
	got := read(resumed.Add(500 * time.Millisecond))
	// The clip's rate: 600 kbit/s, 75 KB a second of media.
	rate := float64(len(data)) / 20
	if secs := float64(got) / rate; secs > 1.2 {
		t.Errorf("%.1f s of media in the 0.5 s after a 2 s stall, want about 0.5 (the stall's media at once)", secs)
	}
}

// leapSource is a title whose clock leaps 20 s ahead past its first PCR
// once leap is set: the index a play reads by replaced under it, as when
// a read far ahead of a fill hands over to the fill's index.
type leapSource struct {
	*memSource
	leap atomic.Bool
}

func (l *leapSource) State() (*tsindex.Index, bool, error) {
	idx, complete, err := l.memSource.State()
	if !l.leap.Load() {
		return idx, complete, err
	}
	x := *idx
	x.PCRs = slices.Clone(idx.PCRs)
	for i := 1; i < len(x.PCRs); i++ {
		x.PCRs[i].PCR += 20 * tsindex.PCRHz
	}
	return &x, complete, err
}

// TestStreamAfterItsClockLeaps: a play whose title's clock at its position
// leaps 20 s ahead of its timeline goes on at its pace from there, not
// silent for 20 s.
func TestStreamAfterItsClockLeaps(t *testing.T) {
	e := startEngine(t, true)
	data := loadClip(t)
	src := &leapSource{memSource: newMemSource(data)}
	_, rtpc := playOverUDP(t, e, src)
	buf := make([]byte, 2048)
	for got := 0; got < 50_000; { // playing
		rtpc.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, _, err := rtpc.ReadFrom(buf)
		if err != nil {
			t.Fatalf("before the leap: %v", err)
		}
		got += n
	}
	src.leap.Store(true)
	rate := float64(len(data)) / 20
	for got := 0; float64(got) < rate; { // a second of media after the leap
		rtpc.SetReadDeadline(time.Now().Add(3 * time.Second))
		n, _, err := rtpc.ReadFrom(buf)
		if err != nil {
			t.Fatalf("%d bytes after the clock leapt 20 s, then silence: %v", got, err)
		}
		got += n
	}
}

// playOverUDP plays src from its start over RTP/UDP to a socket of the
// test's, closed with the stream when the test ends.
func playOverUDP(t *testing.T, e *Engine, src Source) (*Stream, *net.UDPConn) {
	t.Helper()
	rtpc := listenUDP(t)
	st, err := e.NewStream(StreamConfig{Source: src, Mode: RTPUDP, Dest: rtpc.LocalAddr().(*net.UDPAddr), SSRC: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Play(0); err != nil {
		t.Fatal(err)
	}
	return st, rtpc
}
