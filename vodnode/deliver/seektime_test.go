package deliver

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/pion/rtp"
)

// TestSeekIntoUnfilledPartRTPInfo: the position and RTP timestamp a seek
// into the part not yet filled returns (RTP-Info: rtptime is the RTP
// timestamp of the Range's npt, RFC 2326 §12.33) agree with the stream
// that follows: the first packet, the keyframe at or before the npt asked,
// carries the returned timestamp moved back by the time from that
// keyframe to the npt, within 0.25 s (an npt is a picture's PTS, an RTP
// timestamp the PCR clock at the packet: the mux delay between them
// varies by a tenth of a second or so), whether the title's announced
// bitrate is above or below its own. The timestamp of the offset the
// bitrate gave, extrapolated from the last PCRs filled, was 3.3 s off with
// a bitrate 25% above the title's.
func TestSeekIntoUnfilledPartRTPInfo(t *testing.T) {
	for _, pct := range []int64{125, 75} {
		t.Run(fmt.Sprintf("bitrate %d%%", pct), func(t *testing.T) { seekRTPInfo(t, pct) })
	}
}

func seekRTPInfo(t *testing.T, pct int64) {
	e := startEngine(t, false)
	data, full, _, kfNPT := sampleKeyframeBefore(t)
	const target = sampleSeekTarget
	src := newFillingSource(data)
	src.reveal(len(data) / 4)
	srv, cli := tcpPair(t)
	st, err := e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), SSRC: 7, TSBase: 1000, Bitrate: full.Bitrate() * pct / 100})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	info, err := st.Play(target)
	if err != nil {
		t.Fatal(err)
	}
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
			t.Fatal(err)
		}
		if ch != 0 {
			continue // RTCP
		}
		var p rtp.Packet
		if err := p.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		// The first packet is at the keyframe (its PAT and PMT before it):
		// its npt is kfNPT.
		got := float64(int32(p.Timestamp-info.RTPTime)) / 90000
		want := kfNPT - info.NPT
		if math.Abs(got-want) > 0.25 {
			t.Fatalf("seek to %g s: Play returned npt %.3f rtptime %d; the first packet (keyframe at %.3f s) has rtptime %d: %.3f s from the returned one, want %.3f s",
				target, info.NPT, info.RTPTime, kfNPT, p.Timestamp, got, want)
		}
		return
	}
}
