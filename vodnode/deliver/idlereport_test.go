package deliver

import (
	"errors"
	"testing"
	"time"
)

// TestReportsWhileHeld: an MP2T stream over TCP that sends nothing for a
// while, held at its Range's end (npt=4-5.5) or parked where its title's
// fill has got to, goes on sending its sender report every interval, each
// carrying the RTP time where it stands (the next packet's: its clock
// stands still) with the NTP time it was sent; when it goes on (a PLAY
// without Range, the fill going on), its first packet carries that RTP
// time. (It sent nothing: a player heard nothing for as long as it held.)
func TestReportsWhileHeld(t *testing.T) {
	const interval = 200 * time.Millisecond
	for _, held := range []string{"range-end", "fill"} {
		t.Run(held, func(t *testing.T) {
			e := startEngineSR(t, interval)
			data := loadClip(t)
			src := newMemSource(data)
			if held == "fill" {
				src = newFillingSource(data)
				src.reveal(len(data) / 5)
			}
			srv, cli := tcpPair(t)
			st, err := e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), SSRC: 7})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(st.Close)
			npt := 0.0
			if held == "range-end" {
				npt = 4
				st.SetStop(5.5)
			}
			if _, err := st.Play(npt); err != nil {
				t.Fatal(err)
			}
			// Played until it holds (at the Range's end: paused; where the
			// fill stands: parked), and what it sent before is read: no
			// packet for 600 ms from there (up to 15 s). A quiet 600 ms
			// alone may be a loaded machine's stall of the play.
			holds := func() bool { return !st.Playing() }
			if held == "fill" {
				holds = st.WaitingForFill
			}
			for end := time.Now().Add(15 * time.Second); ; {
				if time.Now().After(end) {
					t.Fatal("the stream did not stop sending")
				}
				h := holds()
				if _, pkts := readReports(t, cli, 600*time.Millisecond); h && len(pkts[0]) == 0 {
					break
				}
			}
			srs, pkts := readReports(t, cli, 8*interval)
			if len(pkts[0]) > 0 {
				t.Fatalf("%d packets while held", len(pkts[0]))
			}
			if len(srs[0]) < 4 {
				t.Fatalf("%d sender reports in %v held, want one every %v", len(srs[0]), 8*interval, interval)
			}
			for k, sr := range srs[0] {
				if sr.rtp != srs[0][0].rtp {
					t.Errorf("report %d at RTP time %d, the first at %d: the clock ran on while nothing was sent", k, sr.rtp, srs[0][0].rtp)
				}
				if k > 0 && ntpSeconds(sr.ntp) <= ntpSeconds(srs[0][k-1].ntp) {
					t.Errorf("report %d: NTP time not after the one before", k)
				}
			}
			if held == "fill" {
				src.reveal(len(data))
			} else if _, err := st.Play(-1); err != nil {
				t.Fatal(err)
			}
			var after [2][]esPkt
			for end := time.Now().Add(10 * time.Second); len(after[0]) == 0; {
				if time.Now().After(end) {
					t.Fatal("nothing once it went on")
				}
				_, after = readReports(t, cli, 100*time.Millisecond)
			}
			// The clock at the stream's position, taken again from the
			// PCRs indexed since (fill), may move by a few ticks.
			if d := int32(after[0][0].ts - srs[0][0].rtp); d < -90 || d > 90 {
				t.Errorf("the first packet after the hold at RTP time %d, the reports at %d: %d ticks apart", after[0][0].ts, srs[0][0].rtp, d)
			}
		})
	}
}

// TestReportWhileHeldWriterBusy: the sender report of an MP2T stream held
// over TCP that falls due while the connection's writer is busy (a
// response being written holds it) is not lost until the next interval:
// it is sent once the writer can take it, well before the next one is
// due, carrying the NTP time of its sending and the RTP time where the
// stream stands.
func TestReportWhileHeldWriterBusy(t *testing.T) {
	const interval = 2 * time.Second
	e := startEngineSR(t, interval)
	data := loadClip(t)
	src := newFillingSource(data)
	src.reveal(len(data) / 5)
	srv, cli := tcpPair(t)
	w := NewConnWriter(srv, 0, 0)
	st, err := e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: w, SSRC: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Play(0); err != nil {
		t.Fatal(err)
	}
	// Played up to where the fill stands, then held: its first report.
	var held srSeen
	for end := time.Now().Add(20 * time.Second); ; {
		if time.Now().After(end) {
			t.Fatal("no sender report while held")
		}
		srs, pkts := readReports(t, cli, interval/2)
		if len(pkts[0]) == 0 && len(srs[0]) > 0 && st.WaitingForFill() {
			held = srs[0][len(srs[0])-1]
			break
		}
	}
	// The writer busy (as while a response is written) until the next
	// report has fallen due and been tried.
	st.mu.Lock()
	timer := st.idleTimer
	st.mu.Unlock()
	w.mu.Lock()
	for end := time.Now().Add(3 * interval); ; {
		st.mu.Lock()
		tried := st.idleTimer != timer
		st.mu.Unlock()
		if tried {
			break
		}
		if time.Now().After(end) {
			w.mu.Unlock()
			t.Fatal("no sender report tried within 3 intervals")
		}
		time.Sleep(5 * time.Millisecond)
	}
	freed := time.Now()
	w.mu.Unlock()
	srs, pkts := readReports(t, cli, interval/2)
	if len(pkts[0]) > 0 {
		t.Fatalf("%d packets while held", len(pkts[0]))
	}
	if len(srs[0]) == 0 {
		t.Fatalf("no sender report within %v of the writer taking writes again (the one due while it was busy was dropped)", interval/2)
	}
	sr := srs[0][0]
	if sr.rtp != held.rtp {
		t.Errorf("the report after the busy writer at RTP time %d, the one before at %d", sr.rtp, held.rtp)
	}
	if sent := ntpSeconds(sr.ntp) - ntpSeconds(ntpTime(freed)); sent < -0.01 {
		t.Errorf("the report carries an NTP time %.3f s before the writer took writes again: made when it was dropped", -sent)
	}
}

// TestReportWhileHeldConnectionFailed: a held MP2T stream whose TCP
// connection has failed (its writer takes nothing more) does not try its
// sender report again every idleReportRetry, as it does one a busy writer
// could not take: no retry can send it, and until the RTSP connection
// ended the stream the timer fired 20 times a second for nothing. Its
// next report is tried an interval later.
func TestReportWhileHeldConnectionFailed(t *testing.T) {
	const interval = 2 * time.Second
	e := startEngineSR(t, interval)
	data := loadClip(t)
	src := newFillingSource(data)
	src.reveal(len(data) / 5)
	srv, cli := tcpPair(t)
	w := NewConnWriter(srv, 0, 0)
	st, err := e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: w, SSRC: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Play(0); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(20 * time.Second); ; {
		if time.Now().After(end) {
			t.Fatal("no sender report while held")
		}
		srs, pkts := readReports(t, cli, interval/2)
		if len(pkts[0]) == 0 && len(srs[0]) > 0 && st.WaitingForFill() {
			break
		}
	}
	// The connection fails (as a write that failed leaves its writer).
	w.mu.Lock()
	w.err = errors.New("connection reset (test)")
	w.mu.Unlock()
	timer := func() *time.Timer {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.idleTimer
	}
	// The report due next is tried (the timer replaced), within 2
	// intervals.
	before := timer()
	for end := time.Now().Add(2 * interval); timer() == before; {
		if time.Now().After(end) {
			t.Fatal("no sender report tried within 2 intervals")
		}
		time.Sleep(5 * time.Millisecond)
	}
	tried := timer()
	// Not tried again for most of an interval (a retry would be
	// idleReportRetry, 50 ms, later).
	for end := time.Now().Add(interval / 2); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if timer() != tried {
			t.Fatalf("a report that a failed connection could not take tried again within %v", interval/2)
		}
	}
}
