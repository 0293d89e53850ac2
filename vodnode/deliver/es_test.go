package deliver

import (
	"context"
	"io"
	"math"
	"net"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"vodcluster/cdp/tsindex"
)

func TestProbeES(t *testing.T) {
	src := newFillingSource(loadClip(t))
	go func() { // the head arrives after the probe started
		time.Sleep(100 * time.Millisecond)
		src.reveal(len(src.data))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tr, err := ProbeES(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Video == nil || len(tr.Video.SPS) == 0 || len(tr.Video.PPS) == 0 {
		t.Fatalf("video %+v", tr.Video)
	}
	if tr.Audio == nil || tr.Audio.Config == nil || tr.Audio.Config.SampleRate == 0 {
		t.Fatalf("audio %+v", tr.Audio)
	}
	if _, err := ProbeES(ctx, newMemSource(make([]byte, 188*100))); err == nil {
		t.Error("probe of junk succeeded")
	}
}

func TestESStreamTCP(t *testing.T) {
	e := startEngine(t, false)
	data := loadClip(t)
	src := newMemSource(data)
	tr, err := ProbeES(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	srv, cli := tcpPair(t)
	st, err := e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0),
		Channel: [2]int{0, 2}, SSRC: [2]uint32{1, 2}, Seq: [2]uint16{100, 200}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Seek(5)
	if err != nil || info[0].Seq != 100 || info[1].Seq != 200 || info[0].NPT < 4 || info[0].NPT > 5 {
		t.Fatalf("seek: %+v %v", info, err)
	}
	st.Resume()
	// Read until 2 s of video (50 pictures at 25 a second) and a sender
	// report of each track have come, however long a loaded machine
	// takes (up to 15 s).
	start := time.Now()
	cli.SetReadDeadline(start.Add(15 * time.Second))
	frames, audio := 0, 0
	var firstTS, lastTS, lastAudio uint32
	var srs [2]int // RTCP sender reports per track
	buf := make([]byte, 65536)
	for frames < 50 || audio < 5 || srs[0] == 0 || srs[1] == 0 {
		ch, b, err := nextFrame(cli, buf)
		if err != nil {
			t.Fatalf("after %v: %v (%d video access units, %d audio packets, sender reports %v)", time.Since(start), err, frames, audio, srs)
		}
		if ch == 1 || ch == 3 { // RTCP of video, audio
			if ps, err := rtcp.Unmarshal(b); err == nil {
				if sr, ok := ps[0].(*rtcp.SenderReport); ok && sr.SSRC == uint32(ch/2+1) {
					srs[ch/2]++
				}
			}
			continue
		}
		var p rtp.Packet
		if err := p.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		switch ch {
		case 0:
			if p.PayloadType != 96 || p.SSRC != 1 {
				t.Fatalf("video packet %+v", p.Header)
			}
			if p.Marker && frames < 50 {
				if frames == 0 {
					firstTS = p.Timestamp
				}
				lastTS = p.Timestamp
				frames++
			}
		case 2:
			if p.PayloadType != 97 || p.SSRC != 2 {
				t.Fatalf("audio packet %+v", p.Header)
			}
			if audio > 0 && int32(p.Timestamp-lastAudio) <= 0 {
				t.Fatalf("audio timestamp %d after %d: each packet carries later access units", p.Timestamp, lastAudio)
			}
			lastAudio = p.Timestamp
			audio++
		}
	}
	elapsed := time.Since(start).Seconds()
	// Paced, not faster than real time (a loaded machine only makes it
	// slower): 2 s of video take 1.4 s at least (the 0.6 s the play may
	// send at once at its start, as a 2 s read allowed 65 pictures).
	if elapsed < 1.4 {
		t.Errorf("50 video access units in %.2f s", elapsed)
	}
	span := float64(lastTS-firstTS) / 90000
	if span < 1.2 || span > 2.2 {
		t.Errorf("video timestamps of 50 access units span %.2f s", span)
	}
	// Paused where the play stands by its clock: at least where the last
	// picture sent was due (a picture leaves at its DTS, up to its
	// reorder delay before its PTS: 0.5 s of slack), at most the wall
	// time since the PLAY past the keyframe it started at, plus that
	// slack. (A loaded machine only moves it between the two.)
	pos := st.Pause()
	if from := info[0].NPT; pos < from+span-0.5 || pos > from+time.Since(start).Seconds()+0.5 {
		t.Errorf("paused at %.2f after a play of %.2f s of video in %.2f s from %.2f s", pos, span, time.Since(start).Seconds(), from)
	}
	st.Close()
	if st.BytesSent() == 0 {
		t.Error("no bytes counted")
	}
}

// TestESStreamEnds plays a short title to its end over UDP: OnEnd reports
// the end of the title (and may Close the stream from the callback).
func TestESStreamEnds(t *testing.T) {
	e := startEngine(t, true)
	src := newMemSource(prefix(t, loadClip(t), 1.5))
	tr, err := ProbeES(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	sink := listenUDP(t)
	done := make(chan ended, 1)
	var st *ESStream
	st, err = e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPUDP,
		Dest:  [2]*net.UDPAddr{sink.LocalAddr().(*net.UDPAddr), nil},
		OnEnd: func(r EndReason, err error) { st.Close(); done <- ended{r, err} }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Seek(0); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	select {
	case d := <-done:
		if d.reason != EndOfTitle || d.err != nil {
			t.Fatalf("end %+v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no end of title")
	}
	buf := make([]byte, 2048)
	sink.SetReadDeadline(time.Now().Add(time.Second))
	if _, _, err := sink.ReadFrom(buf); err != nil {
		t.Fatalf("no video packet: %v", err)
	}
}

// TestESTracksOnOneTimeline: each packet leaves when due by its own time
// (the title's audio PES packets sit in the file up to ~0.65 s after the
// video of the same time, and were sent in file order), and the sender
// reports of both tracks map their RTP clocks to the same media time, as
// a player synchronising the tracks by RTCP needs.
//
// What is checked is what a loaded machine cannot move: the order the
// packets are sent in (one sender, one TCP connection: the order read),
// not when they come. A picture leaves at its DTS, up to the reorder
// delay before its timestamp (its PTS); an audio frame leaves as far
// ahead of its timestamp as the pictures that leave earliest against
// theirs (the largest reorder delay). So no picture sent before an audio
// frame has a later timestamp than it, and the latest picture sent
// before each audio frame is about as late as it (the picture of the
// largest reorder delay, sent at its DTS, is sent with the audio of its
// PTS): the largest of those differences is 0 within a picture's
// duration. Audio on a timeline of its own (its timestamps shifted
// against the video's) moves it by the shift. (Timed by arrival, a
// sender stalled 0.7 s on a loaded machine made most audio packets
// seem off their timeline.)
func TestESTracksOnOneTimeline(t *testing.T) {
	testESTracksOnOneTimeline(t, newMemSource(loadClip(t)))
}

// testESTracksOnOneTimeline is TestESTracksOnOneTimeline with src, the
// clip, from 4 s.
func testESTracksOnOneTimeline(t *testing.T, src Source) {
	e := &Engine{Shards: 1, SRInterval: 300 * time.Millisecond}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	st, tr, cli := playESOverTCP(t, e, src)
	rate := float64(tr.Audio.ClockRate())
	if _, err := st.Seek(4); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	type sent struct {
		track int
		media float64 // its timestamp, seconds
	}
	var order []sent
	var srMedia [2][]float64
	var first, last [2]float64 // per track: the first and last timestamps read, seconds
	var got [2]bool
	start := time.Now()
	deadline := start.Add(15 * time.Second)
	buf := make([]byte, 65536)
	// Read until both tracks have sent 2.5 s of media and two sender
	// reports each.
	for !got[0] || !got[1] || last[0]-first[0] < 2.5 || last[1]-first[1] < 2.5 || len(srMedia[0]) < 2 || len(srMedia[1]) < 2 {
		ch, b, ok := readFrame(t, cli, buf, deadline)
		if !ok {
			t.Fatalf("in 15 s: %.3f s of video, %.3f s of audio, %d and %d sender reports", last[0]-first[0], last[1]-first[1], len(srMedia[0]), len(srMedia[1]))
		}
		track := int(ch / 2)
		clock := 90000.0
		if track == 1 {
			clock = rate
		}
		if ch%2 == 1 {
			ps, err := rtcp.Unmarshal(b)
			if err != nil {
				t.Fatal(err)
			}
			if sr, ok := ps[0].(*rtcp.SenderReport); ok {
				// the media time the report says is due at a common instant
				at := ntpToTime(sr.NTPTime)
				srMedia[track] = append(srMedia[track], float64(sr.RTPTime)/clock-at.Sub(start).Seconds())
			}
			continue
		}
		var p rtp.Packet
		if err := p.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		m := float64(p.Timestamp) / clock
		if !got[track] {
			got[track], first[track] = true, m
		}
		last[track] = m
		order = append(order, sent{track, m})
	}
	// For each audio frame from the first picture's on, the latest
	// picture sent before it against it.
	latest, maxDiff, n := math.Inf(-1), math.Inf(-1), 0
	for _, p := range order {
		switch {
		case p.track == 0:
			latest = max(latest, p.media)
		case p.media >= first[0] && !math.IsInf(latest, -1):
			maxDiff = max(maxDiff, latest-p.media)
			n++
		}
	}
	if n < 10 {
		t.Fatalf("%d audio packets after the first picture, want 10 at least (2.5 s)", n)
	}
	if maxDiff > 0.015 || maxDiff < -0.025 {
		t.Errorf("the latest picture sent before an audio frame is at most %.3f s later than it: want 0 (from -0.025 to 0.015 s): the tracks leave on different timelines", maxDiff)
	}
	for _, v := range srMedia[0] {
		for _, a := range srMedia[1] {
			if d := math.Abs(v - a); d > 0.02 {
				t.Fatalf("the tracks' sender reports map the wall clock to media times %.3f s apart (video %v, audio %v)", d, srMedia[0], srMedia[1])
			}
		}
	}
}

// ntpToTime converts an NTP timestamp (RFC 3550 §4) to a time.
func ntpToTime(v uint64) time.Time {
	secs := int64(v>>32) - 2208988800
	frac := int64(v&0xffffffff) * int64(time.Second) >> 32
	return time.Unix(secs, frac)
}

// TestESSeekIntoUnfilledPart: in elementary-stream mode too a seek past
// the bytes filled so far answers the npt asked (RTP-Info's rtptime is
// its time) and starts, once the fill has indexed it, at the keyframe
// presented at or before it. (It started from the title's beginning.)
func TestESSeekIntoUnfilledPart(t *testing.T) {
	e := startEngine(t, false)
	data, full, kfOff, kfNPT := sampleKeyframeBefore(t)
	const target = sampleSeekTarget
	kfPTS := int64(-1)
	for _, k := range full.Keyframes {
		if k.Offset == kfOff {
			kfPTS = k.PTS
		}
	}
	if kfPTS < 0 || kfNPT >= target-0.1 {
		t.Fatalf("sample: keyframe before %g s at %d (%.3f s, PTS %d), want one well before", target, kfOff, kfNPT, kfPTS)
	}
	src := newFillingSource(data)
	src.reveal(len(data) / 4)
	tr, err := ProbeES(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	srv, cli := tcpPair(t)
	st, err := e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), Channel: [2]int{0, -1}, Bitrate: full.Bitrate()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	info, err := st.Seek(target)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint32(full.FirstPTS + int64(target*tsindex.PTSHz)); info[0].NPT != target || info[0].RTPTime != want {
		t.Errorf("seek answered npt %.3f, rtptime %d; want %g and %d", info[0].NPT, info[0].RTPTime, target, want)
	}
	if got := st.Pause(); got != target {
		t.Errorf("paused before it started there: at %.3f, want %g", got, target)
	}
	st.Resume()
	go func() { // the fill goes on, in steps
		for i := 1; i <= 8; i++ {
			time.Sleep(10 * time.Millisecond)
			src.reveal(len(data)/4 + i*(len(data)-len(data)/4)/8)
		}
	}()
	cli.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 65536)
	for {
		ch, b, err := nextFrame(cli, buf)
		if err != nil {
			t.Fatalf("no video packet after the seek: %v", err)
		}
		if ch != 0 {
			continue
		}
		var p rtp.Packet
		if err := p.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		if p.Timestamp != uint32(kfPTS) {
			t.Fatalf("first picture after the seek to %g s: timestamp %d (%.3f s), want the keyframe's %d (%.3f s)",
				target, p.Timestamp, float64(int64(p.Timestamp)-full.FirstPTS)/tsindex.PTSHz, kfPTS, kfNPT)
		}
		return
	}
}

// nextFrame reads one RTSP interleaved frame (RFC 2326 §10.12: '$',
// channel, 16-bit length, payload) from r into buf and returns its
// channel and payload (a slice of buf). Errors: r's.
func nextFrame(r io.Reader, buf []byte) (byte, []byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	l := int(hdr[2])<<8 | int(hdr[3])
	if _, err := io.ReadFull(r, buf[:l]); err != nil {
		return 0, nil, err
	}
	return hdr[1], buf[:l], nil
}
