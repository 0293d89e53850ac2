package deliver

import (
	"math"
	"net"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"vodcluster/cdp/tsindex"
)

// srSeen is an RTCP sender report as a test received it.
type srSeen struct {
	at  time.Time
	ntp uint64
	rtp uint32
}

// readReports reads the frames of cli for d: the sender reports per track
// (channel 1 video, 3 audio) and the RTP packets per track (0, 2).
func readReports(t *testing.T, cli net.Conn, d time.Duration) (srs [2][]srSeen, pkts [2][]esPkt) {
	t.Helper()
	end := time.Now().Add(d)
	buf := make([]byte, 65536)
	for {
		ch, b, ok := readFrame(t, cli, buf, end)
		if !ok {
			return srs, pkts
		}
		if ch%2 == 0 {
			var p rtp.Packet
			if err := p.Unmarshal(b); err != nil {
				t.Fatal(err)
			}
			pkts[ch/2] = append(pkts[ch/2], esPkt{time.Now(), p.SequenceNumber, p.Timestamp})
			continue
		}
		ps, err := rtcp.Unmarshal(b)
		if err != nil {
			t.Fatalf("channel %d: %v", ch, err)
		}
		for _, p := range ps {
			if sr, isSR := p.(*rtcp.SenderReport); isSR {
				srs[ch/2] = append(srs[ch/2], srSeen{time.Now(), sr.NTPTime, sr.RTPTime})
			}
		}
	}
}

// ntpSeconds returns a 64-bit NTP timestamp in seconds.
func ntpSeconds(v uint64) float64 { return float64(v>>32) + float64(v&0xffffffff)/(1<<32) }

// startEngineSR starts an engine whose sender reports come every sr.
func startEngineSR(t *testing.T, sr time.Duration) *Engine {
	t.Helper()
	e := &Engine{Shards: 1, SRInterval: sr}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestESReportsWhileHeldAtRangeEnd: an elementary-stream play held at its
// Range's end (npt=4-5.5) sends no RTP but goes on sending each track's
// sender report every interval, each carrying the RTP time where the play
// holds (5.5 s: its clock stands still) with the NTP time it was sent;
// after the PLAY on, the packets go on from that RTP time. (Nothing was
// sent while held: a player heard nothing for as long as the hold lasted,
// and GStreamer's RTP session times a source out after five intervals.)
func TestESReportsWhileHeldAtRangeEnd(t *testing.T) {
	const interval = 200 * time.Millisecond
	e := startEngineSR(t, interval)
	src := newMemSource(loadClip(t))
	first := src.idx.FirstPTS
	st, tr, cli := playESOverTCP(t, e, src)
	rate := int64(tr.Audio.ClockRate())
	const stop = 5.5
	if _, err := st.Seek(4); err != nil {
		t.Fatal(err)
	}
	st.SetStop(stop)
	st.Resume()
	readESFrames(t, cli, 600*time.Millisecond, 15*time.Second, func(_ *[2][]esPkt, quiet bool) bool {
		return quiet && st.Position() >= stop-0.001
	})
	srs, pkts := readReports(t, cli, 8*interval)
	if len(pkts[0])+len(pkts[1]) > 0 {
		t.Fatalf("%d video and %d audio packets while held", len(pkts[0]), len(pkts[1]))
	}
	stopPTS := first + int64(math.Round(stop*tsindex.PTSHz))
	want := [2]uint32{uint32(stopPTS), uint32(stopPTS * rate / tsindex.PTSHz)}
	for i, name := range []string{"video", "audio"} {
		if len(srs[i]) < 4 {
			t.Fatalf("%s: %d sender reports in %v held, want one every %v", name, len(srs[i]), 8*interval, interval)
		}
		for k, sr := range srs[i] {
			if d := int32(sr.rtp - want[i]); d < -2 || d > 2 {
				t.Errorf("%s: report %d carries RTP time %d, want %d (the Range's end): %d ticks off", name, k, sr.rtp, want[i], d)
			}
			if k == 0 {
				continue
			}
			// NTP times the wall clock's (to within what the reading adds).
			dn := ntpSeconds(sr.ntp) - ntpSeconds(srs[i][k-1].ntp)
			dw := sr.at.Sub(srs[i][k-1].at).Seconds()
			if dn <= 0 || math.Abs(dn-dw) > 0.1 {
				t.Errorf("%s: reports %.3f s apart by NTP, %.3f s by arrival", name, dn, dw)
			}
		}
	}
	if _, err := st.Seek(-1); err != nil {
		t.Fatal(err)
	}
	st.SetStop(-1)
	st.Resume()
	after := readES(t, cli, time.Second)
	if len(after[1]) == 0 {
		t.Fatal("no audio after the PLAY on")
	}
	// An audio packet's RTP time is its first frame's PTS: the first after
	// the hold begins at or after the Range's end, within the frames of
	// one packet (the one before it may carry frames past the end).
	if d := float64(int32(after[1][0].ts-want[1])) / float64(rate); d < -0.01 || d > 0.3 {
		t.Errorf("the first audio after the PLAY on is %.3f s from the RTP time the reports held at", d)
	}
}

// TestESReportsWhileWaitingForTheFill: an elementary-stream play that has
// sent all of a title its fill has stored so far (WaitingForFill) goes on
// sending each track's sender report every interval, its RTP time
// standing at the last packets read instead of running on past them (a
// report more than 1 s ahead of the last packet GStreamer's jitterbuffer
// ignores); once the fill goes on, so does the play.
func TestESReportsWhileWaitingForTheFill(t *testing.T) {
	const interval = 200 * time.Millisecond
	e := startEngineSR(t, interval)
	data := loadClip(t)
	src := newFillingSource(data)
	src.reveal(len(data) / 5)
	st, tr, cli := playESOverTCP(t, e, src)
	rate := float64(tr.Audio.ClockRate())
	if _, err := st.Seek(0); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	played := readESFrames(t, cli, 600*time.Millisecond, 20*time.Second, func(_ *[2][]esPkt, quiet bool) bool {
		return quiet && st.WaitingForFill()
	})
	srs, pkts := readReports(t, cli, 8*interval)
	if len(pkts[0])+len(pkts[1]) > 0 {
		t.Fatalf("%d video and %d audio packets while waiting for the fill", len(pkts[0]), len(pkts[1]))
	}
	for i, name := range []string{"video", "audio"} {
		clock := 90000.0
		if i == 1 {
			clock = rate
		}
		if len(played[i]) == 0 {
			t.Fatalf("%s: nothing played before the wait", name)
		}
		hi := played[i][0].ts
		for _, p := range played[i] {
			if int32(p.ts-hi) > 0 {
				hi = p.ts
			}
		}
		if len(srs[i]) < 4 {
			t.Fatalf("%s: %d sender reports in %v waiting, want one every %v", name, len(srs[i]), 8*interval, interval)
		}
		for k, sr := range srs[i] {
			if d := float64(int32(sr.rtp-hi)) / clock; d > 0.5 {
				t.Errorf("%s: report %d is %.3f s ahead of the last packet sent", name, k, d)
			}
			if sr.rtp != srs[i][0].rtp {
				t.Errorf("%s: report %d at RTP time %d, the first at %d: the clock ran on while nothing was sent", name, k, sr.rtp, srs[i][0].rtp)
			}
		}
	}
	src.reveal(len(data))
	if after := readES(t, cli, time.Second); len(after[0]) == 0 || len(after[1]) == 0 {
		t.Fatalf("%d video and %d audio packets once the fill went on", len(after[0]), len(after[1]))
	}
}
