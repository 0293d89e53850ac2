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
// keyframe to the npt, to the tick, whether the title's announced bitrate
// is above or below its own and however much of it was filled when the
// PLAY was answered. The timestamp of the offset the bitrate gave,
// extrapolated from the last PCRs filled, was 3.3 s off with a bitrate
// 25% above the title's; then, taken from the end of the bytes indexed,
// the PCR's mux delay there against the keyframe's, from 0.1 s early to
// 0.14 s late in the sample (the packets carry the PCR's time, the npt is
// a picture's PTS). A PAUSE and a PLAY without Range before the fill has
// reached the npt answer the same npt and rtptime (they answered the
// clock at the offset the bitrate gave).
func TestSeekIntoUnfilledPartRTPInfo(t *testing.T) {
	for _, c := range []struct {
		pct, filled int64 // announced bitrate, % of the title's; eighths of the title filled
		target      float64
		pause       bool // PAUSE and PLAY without Range before the fill reaches target
	}{{125, 2, sampleSeekTarget, false}, {75, 2, sampleSeekTarget, false}, {100, 4, sampleSeekTarget, false},
		{100, 1, 8.04, false}, {100, 1, 17.9, false}, {100, 4, 15, false}, {100, 2, sampleSeekTarget, true}} {
		name := fmt.Sprintf("bitrate %d%% filled %d-8 to %g s", c.pct, c.filled, c.target)
		if c.pause {
			name += " paused"
		}
		t.Run(name, func(t *testing.T) { seekRTPInfo(t, c.pct, c.filled, c.target, c.pause) })
	}
}

func seekRTPInfo(t *testing.T, pct, filled int64, target float64, pause bool) {
	e := startEngine(t, false)
	data, full, _, _ := sampleKeyframeBefore(t)
	_, kfNPT := clockOf{idx: full}.keyframeBefore(target)
	src := newFillingSource(data)
	start := len(data) * int(filled) / 8
	src.reveal(start)
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
	if pause {
		st.Pause()
		on, err := st.Play(-1)
		if err != nil {
			t.Fatal(err)
		}
		if on.NPT != info.NPT || on.RTPTime != info.RTPTime {
			t.Fatalf("PLAY on before the seek to %g s started: npt %.3f rtptime %d, the seek answered npt %.3f rtptime %d", target, on.NPT, on.RTPTime, info.NPT, info.RTPTime)
		}
	}
	go func() { // the fill goes on, in steps
		for i := 1; i <= 8; i++ {
			time.Sleep(10 * time.Millisecond)
			src.reveal(start + i*(len(data)-start)/8)
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
		if math.Abs(got-want) > 1.5/90000 {
			t.Fatalf("seek to %g s: Play returned npt %.3f rtptime %d; the first packet (keyframe at %.3f s) has rtptime %d: %.3f s from the returned one, want %.3f s",
				target, info.NPT, info.RTPTime, kfNPT, p.Timestamp, got, want)
		}
		return
	}
}
