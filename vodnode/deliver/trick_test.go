package deliver

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"vodcluster/cdp/tsindex"
)

// pictures reads interleaved RTP for d and returns the PTS (90 kHz) of
// every video PES start, failing on packets of other elementary streams.
func pictures(t *testing.T, c net.Conn, idx *tsindex.Index, d time.Duration) []int64 {
	t.Helper()
	var pts []int64
	c.SetReadDeadline(time.Now().Add(d))
	hdr := make([]byte, 4)
	buf := make([]byte, 65536)
	for {
		if _, err := io.ReadFull(c, hdr); err != nil {
			return pts
		}
		l := int(hdr[2])<<8 | int(hdr[3])
		if _, err := io.ReadFull(c, buf[:l]); err != nil {
			return pts
		}
		if hdr[1] != 0 {
			continue
		}
		var p rtp.Packet
		if err := p.Unmarshal(buf[:l]); err != nil {
			t.Fatal(err)
		}
		for i := 0; i+188 <= len(p.Payload); i += 188 {
			ts := p.Payload[i : i+188]
			pid := uint16(ts[1]&0x1f)<<8 | uint16(ts[2])
			switch pid {
			case 0, idx.PMTPID:
			case idx.VideoPID:
				if ts[1]&0x40 == 0 {
					continue
				}
				pl := ts[4:]
				if ts[3]&0x20 != 0 {
					pl = ts[5+int(ts[4]):]
				}
				if len(pl) > 14 && pl[7]&0x80 != 0 {
					q := pl[9:14]
					v := int64(q[0]>>1&0x07)<<30 | int64(q[1])<<22 | int64(q[2]>>1)<<15 | int64(q[3])<<7 | int64(q[4]>>1)
					pts = append(pts, v)
				}
			default:
				t.Fatalf("trick play sent a packet of PID %d", pid)
			}
		}
	}
}

func TestTrickPlay(t *testing.T) {
	e := startEngine(t, false)
	data := loadClip(t)
	idx, _ := tsindex.BuildFrom(bytes.NewReader(data))
	for _, tc := range []struct {
		scale float64
		from  float64
	}{{4, 0}, {8, 0}, {-2, 18}, {-8, 18}} {
		srv, cli := tcpPair(t)
		st, err := e.NewStream(StreamConfig{Source: newMemSource(data), Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		if g := st.SetScale(tc.scale); g != tc.scale {
			t.Fatalf("granted %v for %v", g, tc.scale)
		}
		if _, err := st.Play(tc.from); err != nil {
			t.Fatal(err)
		}
		const wall = 1500 * time.Millisecond
		pts := pictures(t, cli, idx, wall)
		st.Close()
		if len(pts) < 3 {
			t.Fatalf("scale %v: %d pictures", tc.scale, len(pts))
		}
		span := float64(pts[len(pts)-1]-pts[0]) / tsindex.PTSHz
		speed := span / wall.Seconds()
		t.Logf("scale %v: %d pictures, speed %.2f", tc.scale, len(pts), speed)
		// pictures come one per second of media: the span seen is quantised
		if speed*tc.scale < 0 || abs(speed) < abs(tc.scale)*0.5 || abs(speed) > abs(tc.scale)*1.3 {
			t.Errorf("scale %v: %d pictures, %.2f s of media in %v (speed %.2f)", tc.scale, len(pts), span, wall, speed)
		}
		for i := 1; i < len(pts); i++ {
			if (pts[i]-pts[i-1] > 0) != (tc.scale > 0) {
				t.Errorf("scale %v: PTS order %v", tc.scale, pts)
				break
			}
		}
	}
	if g := (&Stream{scale: 1}).SetScale(0.5); g != 1 {
		t.Errorf("slow motion granted %v", g)
	}
	if g := (&Stream{scale: 1}).SetScale(100); g != MaxScale {
		t.Errorf("scale 100 granted %v", g)
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// TestTrickSenderReportTime: in trick play each RTCP sender report maps
// its NTP time to the RTP time of the picture it is sent with (RFC 3550
// §6.4.1), forwards and backwards; it carried the previous picture's, a
// GOP of media (1 s on the sample) off.
func TestTrickSenderReportTime(t *testing.T) {
	for _, scale := range []float64{8, -8} {
		e := startEngineSR(t, 200*time.Millisecond)
		srv, cli := tcpPair(t)
		st, err := e.NewStream(StreamConfig{Source: newMemSource(loadClip(t)), Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		st.SetScale(scale)
		from := 0.0
		if scale < 0 {
			from = 18
		}
		if _, err := st.Play(from); err != nil {
			t.Fatal(err)
		}
		cli.SetReadDeadline(time.Now().Add(3 * time.Second))
		hdr, buf := make([]byte, 4), make([]byte, 65536)
		var last uint32
		seen := false
		for n := 0; n < 3; {
			if _, err := io.ReadFull(cli, hdr); err != nil {
				t.Fatalf("scale %v, after %d sender reports: %v", scale, n, err)
			}
			l := int(hdr[2])<<8 | int(hdr[3])
			if _, err := io.ReadFull(cli, buf[:l]); err != nil {
				t.Fatal(err)
			}
			if hdr[1] == 0 {
				var p rtp.Packet
				if err := p.Unmarshal(buf[:l]); err != nil {
					t.Fatal(err)
				}
				last, seen = p.Timestamp, true
				continue
			}
			ps, err := rtcp.Unmarshal(buf[:l])
			if err != nil || !seen {
				continue
			}
			sr, ok := ps[0].(*rtcp.SenderReport)
			if !ok {
				continue
			}
			n++
			if d := int32(sr.RTPTime - last); d > 9000 || d < -9000 {
				t.Fatalf("scale %v: sender report RTP time %d, the packets sent with it carry %d: %.3f s of media apart", scale, sr.RTPTime, last, float64(d)/90000)
			}
		}
		st.Close()
	}
}
