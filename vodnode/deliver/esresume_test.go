package deliver

import (
	"testing"
	"time"
)

// TestESReportsAgainOnResume: an elementary-stream play held at its
// Range's end (npt=4-5) reports the RTP time it holds at, mapped to the
// wall clock of each report; the PLAY on maps that RTP time to the wall
// clock of the resume instead, so each track's next report comes with its
// first packets after the PLAY, as MP2T streams' does: the report loop
// kept the schedule of the held reports, and players mapped the packets
// after the PLAY by the last held report (off by the time from it to the
// PLAY, up to an interval, 5 s by default) until the next one, an interval
// after it.
func TestESReportsAgainOnResume(t *testing.T) {
	const interval = 2 * time.Second
	e := startEngineSR(t, interval)
	src := newMemSource(loadClip(t))
	st, _, cli := playESOverTCP(t, e, src)
	const stop = 5.0
	if _, err := st.Seek(4); err != nil {
		t.Fatal(err)
	}
	st.SetStop(stop)
	st.Resume()
	readUntilHeld(t, st, cli, 300*time.Millisecond, 15*time.Second)
	// A held report on each track (the loop sends both at once): the
	// next ones are an interval away.
	var held [2][]srSeen
	for end := time.Now().Add(3 * interval); len(held[0]) == 0 || len(held[1]) == 0; {
		if time.Now().After(end) {
			t.Fatalf("%d video and %d audio reports in %v held", len(held[0]), len(held[1]), 3*interval)
		}
		srs, pkts := readReports(t, cli, 50*time.Millisecond)
		if len(pkts[0])+len(pkts[1]) > 0 {
			t.Fatal("RTP while held")
		}
		held[0], held[1] = append(held[0], srs[0]...), append(held[1], srs[1]...)
	}
	if _, err := st.Seek(-1); err != nil {
		t.Fatal(err)
	}
	st.SetStop(-1)
	resumed := time.Now()
	st.Resume()
	srs, pkts := readReports(t, cli, interval*3/4)
	for i, name := range []string{"video", "audio"} {
		if len(pkts[i]) == 0 {
			t.Fatalf("%s: no packets in %v after the PLAY on", name, interval*3/4)
		}
		if len(srs[i]) == 0 {
			t.Fatalf("%s: no sender report in %v after the PLAY on (the last held one %v before it)", name, interval*3/4, resumed.Sub(held[i][len(held[i])-1].at).Round(time.Millisecond))
		}
		sr := srs[i][0]
		if ntpSeconds(sr.ntp) < ntpSeconds(ntpTime(resumed)) {
			t.Errorf("%s: the first report after the PLAY on was made before it", name)
		}
		if d := sr.at.Sub(pkts[i][0].at); d > 500*time.Millisecond {
			t.Errorf("%s: the first report after the PLAY on came %v after its first packet", name, d.Round(time.Millisecond))
		}
	}
}

// TestESReportRetriedWhenTheConnectionIsBusy: a held elementary-stream
// play over TCP whose report falls due while its connection's writer is
// busy (a response or a packet being written, or a client that reads
// slowly: here the writer held from before the report is due until after)
// sends it once the writer is free, not an interval later: the report
// loop sends without waiting and dropped it, and during a play it now
// sends most reports (its timer runs before the packet that sendUnit
// would send them with), so over a busy connection reports went missing.
func TestESReportRetriedWhenTheConnectionIsBusy(t *testing.T) {
	const interval = time.Second
	e := startEngineSR(t, interval)
	src := newMemSource(loadClip(t))
	st, _, cli := playESOverTCP(t, e, src)
	if _, err := st.Seek(4); err != nil {
		t.Fatal(err)
	}
	st.SetStop(5)
	st.Resume()
	readUntilHeld(t, st, cli, 300*time.Millisecond, 15*time.Second)
	// A held report: the next is due an interval after it.
	var last time.Time
	for end := time.Now().Add(3 * interval); last.IsZero(); {
		if time.Now().After(end) {
			t.Fatalf("no report in %v held", 3*interval)
		}
		if srs, _ := readReports(t, cli, 50*time.Millisecond); len(srs[0]) > 0 {
			last = srs[0][len(srs[0])-1].at
		}
	}
	w := st.cfg.Conn
	busy := make(chan struct{})
	time.AfterFunc(time.Until(last.Add(interval/2)), func() {
		w.mu.Lock()
		close(busy)
	})
	<-busy
	time.Sleep(time.Until(last.Add(interval * 13 / 10))) // past the report's time
	freed := time.Now()
	w.mu.Unlock()
	srs, _ := readReports(t, cli, interval/2)
	if len(srs[0]) == 0 || len(srs[1]) == 0 {
		t.Fatalf("%d video and %d audio reports in %v after the writer was free (busy from %v to %v after the last report)",
			len(srs[0]), len(srs[1]), interval/2, interval/2, freed.Sub(last).Round(time.Millisecond))
	}
}

// TestESReportsAgainAfterTheFillWait: an elementary-stream play that
// waited for its title's fill longer than esResync restarts its timeline
// where the bytes come (the held reports mapped its RTP time to the
// wall clock of each), so each track's next report comes with its first
// packets after the wait rather than on the held reports' schedule, up
// to an interval later: until then a player mapped the packets by the
// last report made while waiting.
func TestESReportsAgainAfterTheFillWait(t *testing.T) {
	const interval = 3 * time.Second
	e := startEngineSR(t, interval)
	data := loadClip(t)
	src := newFillingSource(data)
	src.reveal(len(data) / 5)
	st, _, cli := playESOverTCP(t, e, src)
	if _, err := st.Seek(0); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	readUntilFillWait(t, st, cli, 300*time.Millisecond, 20*time.Second)
	quiet := time.Now() // the last packet was sent before
	// Wait past esResync and a report: the timeline restarts when the
	// bytes come, and the report schedule is mid-interval.
	var waited [2][]srSeen
	for end := time.Now().Add(3 * interval); len(waited[0]) == 0 || len(waited[1]) == 0 || time.Since(quiet) < 2*esResync; {
		if time.Now().After(end) {
			t.Fatalf("%d video and %d audio reports in %v waiting for the fill", len(waited[0]), len(waited[1]), 3*interval)
		}
		srs, pkts := readReports(t, cli, 50*time.Millisecond)
		if len(pkts[0])+len(pkts[1]) > 0 {
			t.Fatal("RTP while waiting for the fill")
		}
		waited[0], waited[1] = append(waited[0], srs[0]...), append(waited[1], srs[1]...)
	}
	src.reveal(len(data))
	srs, pkts := readReports(t, cli, interval/2)
	for i, name := range []string{"video", "audio"} {
		if len(pkts[i]) == 0 {
			t.Fatalf("%s: no packets in %v after the fill went on", name, interval/2)
		}
		if len(srs[i]) == 0 {
			t.Fatalf("%s: no sender report in %v after the fill went on (the last while waiting %v before its first packet)",
				name, interval/2, pkts[i][0].at.Sub(waited[i][len(waited[i])-1].at).Round(time.Millisecond))
		}
		if d := srs[i][0].at.Sub(pkts[i][0].at); d > 500*time.Millisecond {
			t.Errorf("%s: the first report after the wait came %v after its first packet", name, d.Round(time.Millisecond))
		}
	}
}
