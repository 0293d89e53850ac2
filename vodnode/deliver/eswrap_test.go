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

	play := func(npt float64, d time.Duration) (info [2]PlayInfo, firstTS [2]uint32, srAhead [2][]float64, pos float64) {
		srv, cli := tcpPair(t)
		st, err := e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), Channel: [2]int{0, 2}})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if info, err = st.Seek(npt); err != nil {
			t.Fatal(err)
		}
		st.Resume()
		start := time.Now()
		cli.SetReadDeadline(start.Add(d))
		var got [2]bool
		var lastTS [2]uint32
		buf := make([]byte, 65536)
		for {
			ch, b, err := nextFrame(cli, buf)
			if err != nil {
				break
			}
			track := int(ch / 2)
			if ch%2 == 1 {
				ps, err := rtcp.Unmarshal(b)
				if err != nil {
					t.Fatal(err)
				}
				if sr, ok := ps[0].(*rtcp.SenderReport); ok && got[track] && time.Since(start) > d/2 {
					clock := 90000.0
					if track == 1 {
						clock = rate
					}
					// the time the report maps its instant to, less that
					// of the track's packet sent just before it
					srAhead[track] = append(srAhead[track], float64(int32(sr.RTPTime-lastTS[track]))/clock)
				}
				continue
			}
			var p rtp.Packet
			if err := p.Unmarshal(b); err != nil {
				t.Fatal(err)
			}
			if !got[track] {
				got[track], firstTS[track] = true, p.Timestamp
			}
			lastTS[track] = p.Timestamp
		}
		return info, firstTS, srAhead, st.Position()
	}

	// From 6 s, past the wrap.
	info, firstTS, _, pos := play(6, 800*time.Millisecond)
	for i, clock := range []float64{90000, rate} {
		if d := float64(int32(firstTS[i]-info[i].RTPTime)) / clock; math.Abs(d) > 1.5 {
			t.Errorf("track %d: first RTP timestamp %d is %.3f s from RTP-Info's rtptime %d", i, firstTS[i], d, info[i].RTPTime)
		}
	}
	if pos < 6 || pos > 8 {
		t.Errorf("position %.3f s 0.8 s into a play from 6 s", pos)
	}

	// From 1 s, across the wrap (3 s in): each report maps its instant
	// to about the time of the packet sent just before it (a picture
	// leaves at its DTS, a little before its PTS; audio as far ahead of
	// its PTS as the pictures' largest reorder delay, 0.2 s here; a report
	// sent late on a loaded machine maps its instant later still: 0.2 s
	// of slack, where a clock read across the wrap is off by hours).
	_, _, srAhead, _ := play(1, 3500*time.Millisecond)
	if len(srAhead[0]) == 0 || len(srAhead[1]) == 0 {
		t.Fatalf("sender reports past the wrap: %d video, %d audio", len(srAhead[0]), len(srAhead[1]))
	}
	for i, within := range [][2]float64{{-0.3, 0.5}, {-0.3, 0.3}} {
		for _, a := range srAhead[i] {
			if a < within[0] || a > within[1] {
				t.Errorf("track %d: past the wrap, sender reports map their instant %v s from the last packet's time, want within %.1f to %.1f s", i, srAhead[i], within[0], within[1])
				break
			}
		}
	}
}
