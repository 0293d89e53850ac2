package deliver

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

// shiftTimestamps returns a copy of the MPEG-TS data with every PCR base,
// PTS and DTS moved on by delta 90 kHz ticks modulo 2^33, as a recording
// of a broadcast whose clock wraps during the title.
func shiftTimestamps(t testing.TB, data []byte, delta int64) []byte {
	t.Helper()
	return shiftTimestampsFrom(t, data, delta, 0, true)
}

// shiftTimestampsFrom returns a copy of the MPEG-TS data with the PTS and
// DTS of every PES that starts at or after byte from (and with pcr, every
// PCR base there) moved on by delta 90 kHz ticks modulo 2^33: without
// pcr, timestamps that jump at from while the clock runs on, as in a
// splice of two encodes whose PCRs were made continuous.
func shiftTimestampsFrom(t testing.TB, data []byte, delta int64, from int, pcr bool) []byte {
	t.Helper()
	const wrap = int64(1) << 33
	out := append([]byte(nil), data...)
	shift := func(v int64) int64 { return ((v+delta)%wrap + wrap) % wrap }
	ts := func(b []byte) int64 {
		return int64(b[0]>>1&7)<<30 | int64(b[1])<<22 | int64(b[2]>>1)<<15 | int64(b[3])<<7 | int64(b[4]>>1)
	}
	putTS := func(b []byte, v int64) {
		b[0] = b[0]&0xf0 | byte(v>>29)&0x0e | 1
		b[1] = byte(v >> 22)
		b[2] = byte(v>>14)&0xfe | 1
		b[3] = byte(v >> 7)
		b[4] = byte(v<<1) | 1
	}
	for off := from - from%TSPacketSize; off+TSPacketSize <= len(out); off += TSPacketSize {
		b := out[off : off+TSPacketSize]
		if b[0] != 0x47 {
			t.Fatalf("no sync byte at %d", off)
		}
		afc, p := b[3]>>4&3, 4
		if afc&2 != 0 {
			if n := int(b[4]); pcr && n > 0 && b[5]&0x10 != 0 {
				base := int64(b[6])<<25 | int64(b[7])<<17 | int64(b[8])<<9 | int64(b[9])<<1 | int64(b[10]>>7)
				base = shift(base)
				b[6], b[7], b[8], b[9] = byte(base>>25), byte(base>>17), byte(base>>9), byte(base>>1)
				b[10] = b[10]&0x7f | byte(base<<7)
			}
			p += 1 + int(b[4])
		}
		if b[1]&0x40 == 0 || afc&1 == 0 || p+14 > TSPacketSize || b[p] != 0 || b[p+1] != 0 || b[p+2] != 1 || b[p+3] < 0xc0 {
			continue // not the start of an audio or video PES
		}
		flags := b[p+7] >> 6
		if flags&2 != 0 {
			putTS(b[p+9:], shift(ts(b[p+9:])))
		}
		if flags == 3 {
			putTS(b[p+14:], shift(ts(b[p+14:])))
		}
	}
	return out
}

// TestESAcrossPTSWrap: a title whose 33-bit clock wraps during it (a
// broadcast recording). A play from after the wrap gives the audio RTP
// timestamps RTP-Info announced and a position past the wrap; a play
// across it keeps its tracks' sender reports on one timeline.
func TestESAcrossPTSWrap(t *testing.T) {
	e := &Engine{Shards: 1, SRInterval: 300 * time.Millisecond}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	// The clip's PTS of 3 s of npt... its raw clock wraps 3 s in.
	clip := loadClip(t)
	first := newMemSource(clip).idx.FirstPTS
	src := newMemSource(shiftTimestamps(t, clip, 1<<33-(first+3*90000)))
	tr, err := ProbeES(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	rate := float64(tr.Audio.ClockRate())
	clocks := [2]float64{90000, rate}

	// play plays from npt for at least d and until each track has sent a
	// packet and, with reports set, that many sender reports sent after
	// a packet of the track's past npt past (a loaded machine only makes
	// it take longer). It returns, per track,
	// RTP-Info's entry, the first RTP timestamp, the largest step between
	// two packets' timestamps (seconds of the track's clock), and for
	// each of those reports how far its RTP time is ahead of the track's
	// packet sent just before it, and how far ahead it is of RTP-Info's
	// rtptime less the wall time from the PLAY to the report's NTP time
	// (both in seconds); and the stream's position at the end, and the
	// wall time from the PLAY to it.
	type played struct {
		info            [2]PlayInfo
		firstTS         [2]uint32
		maxStep         [2]float64
		srAhead, srPast [2][]float64
		pos             float64
		elapsed         time.Duration
	}
	play := func(npt float64, d time.Duration, reports int, past float64) (r played) {
		srv, cli := tcpPair(t)
		st, err := e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), Channel: [2]int{0, 2}})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if r.info, err = st.Seek(npt); err != nil {
			t.Fatal(err)
		}
		resumed := time.Now()
		st.Resume()
		cli.SetReadDeadline(resumed.Add(d + 15*time.Second))
		var got [2]bool
		var lastTS [2]uint32
		buf := make([]byte, 65536)
		for time.Since(resumed) < d || !got[0] || !got[1] || len(r.srAhead[0]) < reports || len(r.srAhead[1]) < reports {
			ch, b, err := nextFrame(cli, buf)
			if err != nil {
				t.Fatalf("after %v: %v (packets of each track: %v; sender reports past %.1f s: %d, %d)", time.Since(resumed), err, got, past, len(r.srAhead[0]), len(r.srAhead[1]))
			}
			track := int(ch / 2)
			if ch%2 == 1 {
				ps, err := rtcp.Unmarshal(b)
				if err != nil {
					t.Fatal(err)
				}
				if sr, ok := ps[0].(*rtcp.SenderReport); ok && got[track] && r.info[track].NPT+float64(int32(lastTS[track]-r.info[track].RTPTime))/clocks[track] > past {
					// the time the report maps its instant to, less that
					// of the track's packet sent just before it
					r.srAhead[track] = append(r.srAhead[track], float64(int32(sr.RTPTime-lastTS[track]))/clocks[track])
					at := time.Unix(0, 0).Add(time.Duration(sr.NTPTime>>32-2208988800)*time.Second + time.Duration(sr.NTPTime&(1<<32-1)*1e9>>32))
					r.srPast[track] = append(r.srPast[track], float64(int32(sr.RTPTime-r.info[track].RTPTime))/clocks[track]-at.Sub(resumed).Seconds())
				}
				continue
			}
			var p rtp.Packet
			if err := p.Unmarshal(b); err != nil {
				t.Fatal(err)
			}
			if !got[track] {
				got[track], r.firstTS[track] = true, p.Timestamp
			} else {
				r.maxStep[track] = max(r.maxStep[track], math.Abs(float64(int32(p.Timestamp-lastTS[track])))/clocks[track])
			}
			lastTS[track] = p.Timestamp
		}
		r.pos = st.Position()
		r.elapsed = time.Since(resumed)
		return r
	}

	// From 6 s, past the wrap.
	r := play(6, 800*time.Millisecond, 0, 0)
	for i, clock := range clocks {
		if d := float64(int32(r.firstTS[i]-r.info[i].RTPTime)) / clock; math.Abs(d) > 1.5 {
			t.Errorf("track %d: first RTP timestamp %d is %.3f s from RTP-Info's rtptime %d", i, r.firstTS[i], d, r.info[i].RTPTime)
		}
	}
	// Its position, on the play's clock, is past where the clock started
	// once both tracks sent (the first unit read, at most the audio's
	// lead, 0.5 s, before RTP-Info's npt, the keyframe at 6 s) and no
	// further from there than the wall time since the PLAY, plus the 1.5
	// s a first unit read may stand past it (below). Past the wrap, it
	// read 0.
	if from := r.info[0].NPT; r.pos < from-0.5 || r.pos > from+r.elapsed.Seconds()+1.5 {
		t.Errorf("position %.3f s %v into a play from %.3f s", r.pos, r.elapsed.Round(time.Millisecond), from)
	}

	// From 1 s, across the wrap (3 s in). A clock read across the wrap
	// is off by hours (2^33 ticks of 90 kHz are 5965 s at 48 kHz, modulo
	// 2^32): the bounds below are on what a loaded machine cannot move.
	// Each track's packets go on from RTP-Info's rtptime without a jump.
	// Each sender report maps its instant to a time no earlier than that
	// of the packet sent just before it, less how far ahead of the
	// timeline a packet may leave (a picture leaves at its DTS, a little
	// before its PTS; audio as far ahead of its PTS as the pictures'
	// largest reorder delay, 0.2 s here): 0.3 s. And no later than the
	// wall time since the PLAY, on RTP-Info's timeline: the stream's
	// clock starts, once the PLAY is made, at its first unit read, which
	// is at most 1.5 s past RTP-Info's point (the start keyframe's PTS;
	// an audio frame is multiplexed up to 1 s before its time), and only
	// ever falls behind that (a report sent late maps a later instant,
	// but its NTP time is as late; a timeline that restarts after a late
	// read moves back). How far a report is ahead of the last packet
	// received grows with a loaded machine's delays (a packet sent late,
	// a report after it on time) and is not bounded: not checked.
	r = play(1, 0, 3, 3.5)
	info, firstTS, maxStep, srAhead, srPast := r.info, r.firstTS, r.maxStep, r.srAhead, r.srPast
	for i, clock := range clocks {
		if d := float64(int32(firstTS[i]-info[i].RTPTime)) / clock; math.Abs(d) > 1.5 {
			t.Errorf("track %d: across the wrap, first RTP timestamp %d is %.3f s from RTP-Info's rtptime %d", i, firstTS[i], d, info[i].RTPTime)
		}
		if maxStep[i] > 1 {
			t.Errorf("track %d: across the wrap, RTP timestamps jump by %.3f s", i, maxStep[i])
		}
		for _, a := range srAhead[i] {
			if a < -0.3 {
				t.Errorf("track %d: past the wrap, sender reports map their instant %v s from the last packet's time, want no earlier than -0.3 s", i, srAhead[i])
				break
			}
		}
		for _, a := range srPast[i] {
			if a > 1.5 {
				t.Errorf("track %d: past the wrap, sender reports map their instant %v s past RTP-Info's rtptime and the wall time since the PLAY, want at most 1.5 s", i, srPast[i])
				break
			}
		}
	}
}
