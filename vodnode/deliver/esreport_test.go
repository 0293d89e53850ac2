package deliver

import (
	"math"
	"net"
	"os/exec"
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
	readUntilHeld(t, st, cli, 600*time.Millisecond, 15*time.Second)
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
	played := readUntilFillWait(t, st, cli, 600*time.Millisecond, 20*time.Second)
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

// TestESAudioOnlySeekIntoTheFill: a title without video (AAC alone) seeked
// into the part its fill has not indexed yet (npt=8 with 2 s stored)
// starts there once the fill gets there: the first audio packet sent
// carries the frame presented at 8 s (the audio read before it, from a
// second before, dropped), its RTP time that of RTP-Info's (npt counted
// on the title's clock from its start, as its duration is), and its
// position counts from there.
func TestESAudioOnlySeekIntoTheFill(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	// Audio placed 0.2 s before its time (not 0.7 to 0.9 s as by
	// default): the play, which reads from a second before npt, has
	// audio before npt to drop.
	cmd := exec.Command("ffmpeg", "-v", "error", "-i", "../../cdp/samples/clip-a.ts", "-map", "0:a", "-c", "copy",
		"-muxdelay", "0.2", "-muxpreload", "0.2", "-f", "mpegts", "pipe:1")
	data, err := cmd.Output()
	if err != nil || len(data) == 0 {
		t.Fatalf("ffmpeg: %v", err)
	}
	e := startEngine(t, false)
	src := newFillingSource(data)
	src.reveal(len(prefix(t, data, 2)))
	st, tr, cli := playESOverTCP(t, e, src)
	if tr.Video != nil || tr.Audio == nil {
		t.Fatalf("tracks %+v, want audio alone", tr)
	}
	rate := float64(tr.Audio.ClockRate())
	const npt = 8
	info, err := st.Seek(npt)
	if err != nil {
		t.Fatal(err)
	}
	if info[1].NPT != npt {
		t.Fatalf("Seek(%d) answered npt %.3f", npt, info[1].NPT)
	}
	st.Resume()
	src.reveal(len(data))
	got := readES(t, cli, 1500*time.Millisecond)
	if len(got[1]) == 0 {
		t.Fatal("no audio")
	}
	d := float64(int32(got[1][0].ts-info[1].RTPTime)) / rate
	t.Logf("first audio %.3f s from npt %d", d, npt)
	if d > 0 || d < -0.3 {
		t.Errorf("the first audio is %.3f s from RTP-Info's time of %d s, want the packet carrying it", d, npt)
	}
	if pos := st.Position(); pos < npt+0.5 || pos > npt+3 {
		t.Errorf("position %.3f s after 1.5 s of play from %d s", pos, npt)
	}
}
