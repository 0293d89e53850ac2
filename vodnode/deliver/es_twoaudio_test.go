package deliver

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

// twoAudioTitle returns the sample clip's video with two AAC tracks in
// its place, told apart by their tone, sample rate and language: a 440 Hz
// sine at 48 kHz ("eng") and a 1 kHz sine at 44.1 kHz ("fra"), 20 s.
func twoAudioTitle(t testing.TB) []byte {
	t.Helper()
	return twoAudioTitleCut(t, 20)
}

// twoAudioTitleCut is twoAudioTitle with its second audio track cut at
// cut seconds (the video and the first audio run to 20 s).
func twoAudioTitleCut(t testing.TB, cut float64) []byte {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ffmpeg", "-v", "error", "-i", "../../cdp/samples/clip-a.ts",
		"-f", "lavfi", "-t", "20", "-i", "sine=frequency=440:sample_rate=48000",
		"-f", "lavfi", "-t", strconv.FormatFloat(cut, 'f', 3, 64), "-i", "sine=frequency=1000:sample_rate=44100",
		"-map", "0:v", "-map", "1:a", "-map", "2:a", "-c:v", "copy", "-c:a", "aac", "-b:a", "64k",
		"-metadata:s:a:0", "language=eng", "-metadata:s:a:1", "language=fra", "-f", "mpegts", "pipe:1")
	data, err := cmd.Output()
	if err != nil || len(data) == 0 {
		t.Fatalf("ffmpeg: %v", err)
	}
	return data
}

// TestESProbeTwoAudioTracks: ProbeES offers each AAC track of a title
// with two, in PMT order, each with its own payload type, its own config
// (sample rate) and its PMT language; Audio is the first.
func TestESProbeTwoAudioTracks(t *testing.T) {
	tr, err := ProbeES(context.Background(), newMemSource(twoAudioTitle(t)))
	if err != nil {
		t.Fatal(err)
	}
	a := tr.AudioTracks()
	if tr.Video == nil || len(a) != 2 || tr.Audio != a[0].Format {
		t.Fatalf("tracks %+v, want video and two audio tracks", tr)
	}
	for k, want := range []struct {
		pt   uint8
		rate int
		lang string
	}{{97, 48000, "eng"}, {98, 44100, "fra"}} {
		if f := a[k].Format; f.PayloadTyp != want.pt || f.ClockRate() != want.rate || a[k].Lang != want.lang || a[k].PID == 0 {
			t.Errorf("audio track %d: payload type %d, rate %d, language %q, PID %d; want %d, %d, %q", k, f.PayloadTyp, f.ClockRate(), a[k].Lang, a[k].PID, want.pt, want.rate, want.lang)
		}
	}
}

// esTwoAudioPkts plays the two-audio title over TCP with the channels
// given (video, first audio, second audio: < 0 not set up) until each
// audio channel set up has had want packets and 2.5 s passed (20 s at
// most), and returns
// the RTP packets read per channel and the SSRCs of the sender reports.
func esTwoAudioPkts(t *testing.T, ch [3]int, want int) (map[byte][]*rtp.Packet, map[uint32]bool) {
	t.Helper()
	return esTwoAudioPktsOf(t, twoAudioTitle(t), 0, ch, want)
}

// esTwoAudioPktsOf is esTwoAudioPkts for title data played from npt
// seconds.
func esTwoAudioPktsOf(t *testing.T, data []byte, npt float64, ch [3]int, want int) (map[byte][]*rtp.Packet, map[uint32]bool) {
	t.Helper()
	src := newMemSource(data)
	tr, err := ProbeES(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	e := startEngine(t, false)
	srv, cli := tcpPair(t)
	st, err := e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0),
		Channel: [2]int{ch[0], ch[1]}, SSRC: [2]uint32{1, 2},
		More: []ESTrackConfig{{Channel: ch[2], SSRC: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	info, err := st.SeekTracks(npt)
	if err != nil || len(info) != 3 {
		t.Fatalf("SeekTracks: %v, %d tracks", err, len(info))
	}
	st.Resume()
	got := map[byte][]*rtp.Packet{}
	srs := map[uint32]bool{}
	buf := make([]byte, 65536)
	end := time.Now().Add(20 * time.Second)
	begin := time.Now()
	done := func() bool {
		if time.Since(begin) < 2500*time.Millisecond {
			return false // a sender report of each
		}
		for _, c := range ch[1:] {
			if c >= 0 && len(got[byte(c)]) < want {
				return false
			}
		}
		return true
	}
	for !done() {
		c, b, ok := readFrame(t, cli, buf, end)
		if !ok {
			t.Fatalf("packets per channel in 20 s: %d, %d, %d", len(got[0]), len(got[2]), len(got[4]))
		}
		if c%2 == 1 {
			if ps, err := rtcp.Unmarshal(b); err == nil {
				if sr, ok := ps[0].(*rtcp.SenderReport); ok {
					srs[sr.SSRC] = true
				}
			}
			continue
		}
		p := &rtp.Packet{}
		if err := p.Unmarshal(append([]byte(nil), b...)); err != nil {
			t.Fatal(err)
		}
		got[c] = append(got[c], p)
	}
	// Each audio stream starts at RTP-Info's time of its track, at its
	// own clock: its first packet within the mux's lead (a frame sent
	// up to 0.5 s ahead, read from the keyframe before npt).
	for k := 1; k <= 2; k++ {
		if ps := got[byte(ch[k])]; ch[k] >= 0 && len(ps) > 0 {
			rate := float64(tr.AudioTracks()[k-1].Format.ClockRate())
			if d := float64(int32(ps[0].Timestamp-info[k].RTPTime)) / rate; d < -1 || d > 1.5 {
				t.Errorf("audio track %d: first packet %.3f s from RTP-Info's time", k, d)
			}
		}
	}
	return got, srs
}

// checkAudioStream checks that the RTP packets ps of one audio stream are
// of payload type pt and SSRC ssrc, in sequence, their timestamps
// increasing by whole 1024-sample frames (within the one tick a PTS's
// 90 kHz rounding leaves at 44.1 kHz): one track's frames alone.
func checkAudioStream(t *testing.T, name string, ps []*rtp.Packet, pt uint8, ssrc uint32) {
	t.Helper()
	for i, p := range ps {
		if p.PayloadType != pt || p.SSRC != ssrc {
			t.Fatalf("%s packet %d: payload type %d, SSRC %d; want %d, %d", name, i, p.PayloadType, p.SSRC, pt, ssrc)
		}
		if i > 0 && int32(p.Timestamp-ps[i-1].Timestamp) <= 0 {
			t.Fatalf("%s packet %d: timestamp %d after %d: another track's frames on the stream", name, i, p.Timestamp, ps[i-1].Timestamp)
		}
		if i > 0 && p.SequenceNumber != ps[i-1].SequenceNumber+1 {
			t.Fatalf("%s packet %d: sequence %d after %d", name, i, p.SequenceNumber, ps[i-1].SequenceNumber)
		}
	}
	for i := 1; i < len(ps); i++ {
		if d := (ps[i].Timestamp - ps[i-1].Timestamp + 1) % 1024; d > 2 {
			t.Fatalf("%s: timestamp step %d, not whole AAC frames", name, ps[i].Timestamp-ps[i-1].Timestamp)
		}
	}
}

// TestESEachAudioTrackOnItsOwnStream: a title with two AAC tracks (two
// languages) plays each, set up, on its own RTP stream: the first with
// payload type 97 on its channel, the second with 98 on its own, each
// carrying only its own frames (timestamps increasing at its own clock,
// whole frames) and reported by its own sender reports. (Only the first
// was offered and sent: a viewer had no choice of language.)
func TestESEachAudioTrackOnItsOwnStream(t *testing.T) {
	got, srs := esTwoAudioPkts(t, [3]int{0, 2, 4}, 40)
	checkAudioStream(t, "first audio", got[2], 97, 2)
	checkAudioStream(t, "second audio", got[4], 98, 3)
	if len(got[0]) == 0 {
		t.Error("no video")
	}
	for _, ssrc := range []uint32{1, 2, 3} {
		if !srs[ssrc] {
			t.Errorf("no sender report of SSRC %d (reports of %v)", ssrc, srs)
		}
	}
}

// TestESSecondAudioTrackAlone: a client that sets up the video and the
// second audio track only gets that track's packets (payload type 98,
// its SSRC, its 44.1 kHz clock) and none of the first's, on the
// channel it set up.
func TestESSecondAudioTrackAlone(t *testing.T) {
	got, _ := esTwoAudioPkts(t, [3]int{0, -1, 2}, 40)
	checkAudioStream(t, "second audio", got[2], 98, 3)
	for c, ps := range got {
		if c != 0 && c != 2 {
			t.Errorf("%d packets on channel %d, not set up", len(ps), c)
		}
	}
}

// TestESPlayAfterOneAudioTrackEnds: a play from a point after which the
// second of two AAC tracks has no more packets (cut at 6 s, the first
// runs on) sends the video and the first track at once, nothing on the
// second's stream: the track absent from the play's head alone is left
// out. (Every audio track was left out when one was absent: the first
// track, there all along, went silent too.)
func TestESPlayAfterOneAudioTrackEnds(t *testing.T) {
	data := twoAudioTitleCut(t, 6)
	got, _ := esTwoAudioPktsOf(t, data, 12, [3]int{0, 2, -1}, 10)
	checkAudioStream(t, "first audio", got[2], 97, 2)
	if len(got[0]) < 10 {
		t.Errorf("%d video packets", len(got[0]))
	}
	// Both set up: the second's stream stays silent, the first plays.
	got, _ = esTwoAudioPktsOf(t, data, 12, [3]int{0, 2, 4}, 0)
	if len(got[2]) < 10 || len(got[4]) != 0 {
		t.Errorf("play from 12 s, the second track cut at 6 s: %d packets of the first, %d of the second; want the first's alone", len(got[2]), len(got[4]))
	}
	// From before the cut, both.
	got, _ = esTwoAudioPktsOf(t, data, 4.5, [3]int{0, 2, 4}, 10)
	checkAudioStream(t, "first audio", got[2], 97, 2)
	checkAudioStream(t, "second audio", got[4], 98, 3)
}
