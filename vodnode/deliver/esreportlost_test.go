package deliver

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// triesIn counts the sends of st's report loop over d.
func triesIn(st *ESStream, d time.Duration) int64 {
	before := st.reportTries.Load()
	time.Sleep(d) // the window counted, not a wait for an event
	return st.reportTries.Load() - before
}

// TestESReportLostNotRetried: an elementary-stream report that cannot be
// sent for good (a UDP play whose client gave no RTCP port; a TCP
// connection that failed) is not tried again esReportRetry later, as one
// a busy writer could not take is: the report loop took both for a busy
// writer and ran 20 times a second for as long as the play lasted.
func TestESReportLostNotRetried(t *testing.T) {
	const interval = 500 * time.Millisecond
	const window = time.Second
	// A report per track per interval (the tracks' reports fall due
	// apart), and slack; a retry every esReportRetry would be 20.
	most := 2*int64(window/interval) + 2
	t.Run("udp without rtcp", func(t *testing.T) {
		e := startEngine(t, true)
		e.SRInterval = interval
		src := newMemSource(loadClip(t))
		tr, err := ProbeES(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		sink := listenUDP(t)
		st, err := e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPUDP,
			Dest: [2]*net.UDPAddr{sink.LocalAddr().(*net.UDPAddr), sink.LocalAddr().(*net.UDPAddr)}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if _, err := st.Seek(4); err != nil {
			t.Fatal(err)
		}
		st.SetStop(5)
		st.Resume()
		// Held at the Range's end: no packet carries a report that the
		// loop left due.
		for end := time.Now().Add(15 * time.Second); st.Position() < 5-0.001; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("the play stands at npt %.3f, not held at 5", st.Position())
			}
		}
		if n := triesIn(st, window); n > most {
			t.Fatalf("%d report sends in %v at one report every %v: a report with no RTCP port to go to was retried", n, window, interval)
		}
	})
	t.Run("tcp connection failed", func(t *testing.T) {
		e := startEngineSR(t, interval)
		src := newMemSource(loadClip(t))
		st, _, cli := playESOverTCP(t, e, src)
		if _, err := st.Seek(4); err != nil {
			t.Fatal(err)
		}
		st.SetStop(5)
		st.Resume()
		readUntilHeld(t, st, cli, 300*time.Millisecond, 15*time.Second)
		w := st.cfg.Conn
		w.mu.Lock()
		w.err = errors.New("connection reset (test)")
		w.mu.Unlock()
		if n := triesIn(st, window); n > most {
			t.Fatalf("%d report sends in %v at one report every %v: a report the failed connection could not take was retried", n, window, interval)
		}
	})
}
