package deliver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/pion/rtp"

	"vodcluster/cdp/tsindex"
)

// bigPictureTitle returns 3 s of 720p H.264 with AAC whose intra pictures
// take about 0.5 MB each (noise at a high quality), made by ffmpeg.
func bigPictureTitle(t *testing.T) []byte {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	data, err := exec.CommandContext(ctx, "ffmpeg", "-v", "error",
		"-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=25", "-f", "lavfi", "-i", "sine=sample_rate=48000",
		"-t", "3", "-vf", "noise=alls=12:allf=t", "-c:v", "libx264", "-preset", "ultrafast", "-crf", "18", "-g", "25", "-bf", "0",
		"-c:a", "aac", "-f", "mpegts", "pipe:1").Output()
	if err != nil || len(data) == 0 {
		t.Fatalf("ffmpeg: %v", err)
	}
	return data
}

// firstPicture returns the video TS packets of the picture at the title's
// first keyframe, as the title holds them.
func firstPicture(t *testing.T, data []byte, idx *tsindex.Index) []byte {
	t.Helper()
	var pic []byte
	for off := idx.Keyframes[0].Offset; off+TSPacketSize <= int64(len(data)); off += TSPacketSize {
		p := data[off : off+TSPacketSize]
		if uint16(p[1]&0x1f)<<8|uint16(p[2]) != idx.VideoPID {
			continue
		}
		if p[1]&0x40 != 0 && len(pic) > 0 {
			break
		}
		pic = append(pic, p...)
	}
	return pic
}

// videoOf keeps the packets of pid in ts, in order.
func videoOf(ts []byte, pid uint16) []byte {
	var out []byte
	for i := 0; i+TSPacketSize <= len(ts); i += TSPacketSize {
		if p := ts[i : i+TSPacketSize]; uint16(p[1]&0x1f)<<8|uint16(p[2]) == pid {
			out = append(out, p...)
		}
	}
	return out
}

// TestTrickPlaySendsLargePicturesWhole: trick play sends a keyframe
// picture larger than 256 kB (the 720p noise title's are about 0.5 MB)
// whole, at one RTP timestamp, over TCP and over UDP with and without
// GSO; it was cut at 256 kB of the file, and the decoder showed a
// broken picture.
func TestTrickPlaySendsLargePicturesWhole(t *testing.T) {
	data := bigPictureTitle(t)
	idx, err := tsindex.BuildFrom(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	want := firstPicture(t, data, idx)
	if len(want) <= 256<<10 {
		t.Fatalf("the title's first picture takes %d bytes: not larger than 256 kB", len(want))
	}
	for _, mode := range []string{"tcp", "udp", "udp-gso"} {
		t.Run(mode, func(t *testing.T) {
			e := startEngine(t, mode != "tcp")
			if mode == "udp-gso" && !e.UDP.gso {
				t.Skip("the kernel has no UDP GSO")
			}
			if mode == "udp" {
				e.UDP.gso = false
			}
			cfg := StreamConfig{Source: newMemSource(data)}
			var cli net.Conn
			if mode == "tcp" {
				srv, c := tcpPair(t)
				cfg.Mode, cfg.Conn, cli = RTPTCP, NewConnWriter(srv, 0, 0), c
			} else {
				rtpc, rtcpc := listenUDP(t), listenUDP(t)
				cfg.Mode, cfg.Dest, cfg.RTCPDest, cli = RTPUDP, rtpc.LocalAddr().(*net.UDPAddr), rtcpc.LocalAddr().(*net.UDPAddr), rtpc
			}
			st, err := e.NewStream(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			st.SetScale(2)
			if _, err := st.Play(0); err != nil {
				t.Fatal(err)
			}
			got, stamps := receivePicture(t, cli, mode == "tcp", idx.VideoPID)
			if !bytes.Equal(got, want) {
				t.Fatalf("first trick-play picture: %d bytes of video packets sent, the title's takes %d", len(got), len(want))
			}
			if len(stamps) != 1 {
				t.Fatalf("the picture's packets carry RTP timestamps %v, want one", stamps)
			}
		})
	}
}

// receivePicture reads RTP (interleaved when tcp) until the second video
// PES start and returns the video packets of the first picture and the
// RTP timestamps of the packets that carried them.
func receivePicture(t *testing.T, c net.Conn, tcp bool, pid uint16) ([]byte, map[uint32]bool) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	hdr, buf := make([]byte, 4), make([]byte, 65536)
	var pic []byte
	stamps := map[uint32]bool{}
	for {
		var b []byte
		if tcp {
			if _, err := io.ReadFull(c, hdr); err != nil {
				t.Fatalf("after %d bytes of the picture: %v", len(pic), err)
			}
			l := int(hdr[2])<<8 | int(hdr[3])
			if _, err := io.ReadFull(c, buf[:l]); err != nil {
				t.Fatal(err)
			}
			if hdr[1] != 0 {
				continue
			}
			b = buf[:l]
		} else {
			n, err := c.Read(buf)
			if err != nil {
				t.Fatalf("after %d bytes of the picture: %v", len(pic), err)
			}
			b = buf[:n]
		}
		var p rtp.Packet
		if err := p.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		v := videoOf(p.Payload, pid)
		for i := 0; i < len(v); i += TSPacketSize {
			if v[i+1]&0x40 != 0 && len(pic) > 0 {
				return pic, stamps
			}
			pic = append(pic, v[i:i+TSPacketSize]...)
			stamps[p.Timestamp] = true
		}
	}
}

// TestTrickPlayWithinTheTitleBitrate: trick play sends no more bytes than
// the title's bitrate allows (what the session's reservation holds),
// passing over the pictures it has no room for, while the media still
// advances at the scale; without a bitrate (a title without one) it
// sends every picture, more than that.
func TestTrickPlayWithinTheTitleBitrate(t *testing.T) {
	e := startEngine(t, false)
	data := loadClip(t)
	idx, _ := tsindex.BuildFrom(bytes.NewReader(data))
	// a quarter of the sample's (600 kbit/s), under what its keyframes
	// take at scale 8 (about 590 kbit/s)
	bitrate := int64(float64(idx.Size*8)/idx.Duration()) / 4 // bit/s
	const scale, wall = 8, 2 * time.Second
	run := func(bitrate int64) (bytesSent int, pts []int64) {
		srv, cli := tcpPair(t)
		st, err := e.NewStream(StreamConfig{Source: newMemSource(data), Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), Bitrate: bitrate})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		st.SetScale(scale)
		if _, err := st.Play(0); err != nil {
			t.Fatal(err)
		}
		pts = pictures(t, cli, idx, wall)
		return int(st.BytesSent()), pts
	}
	budget := int(bitrate * int64(wall/time.Millisecond) / 8000)
	free, freePTS := run(0)
	if free <= budget*3/2 {
		t.Fatalf("without a bitrate %d bytes sent in %v (%d pictures): not over the %d of %d bit/s; the test proves nothing", free, wall, len(freePTS), budget, bitrate)
	}
	sent, pts := run(bitrate)
	if sent > budget+len(firstPicture(t, data, idx))+4096 || len(pts) >= len(freePTS) {
		t.Errorf("at %d bit/s: %d bytes (%d pictures) in %v, want at most %d and one picture (fewer pictures than the %d sent without a bitrate)", bitrate, sent, len(pts), wall, budget, len(freePTS))
	}
	if len(pts) < 2 {
		t.Fatalf("at %d bit/s: %d pictures in %v", bitrate, len(pts), wall)
	}
	if speed := float64(pts[len(pts)-1]-pts[0]) / tsindex.PTSHz / wall.Seconds(); speed < scale*0.5 || speed > scale*1.3 {
		t.Errorf("at %d bit/s: media advanced at %.2f times the wall clock, want about %d (pictures %v)", bitrate, speed, scale, pts)
	}
	t.Logf("%d bit/s: %d bytes, %d pictures; without: %d bytes, %d pictures", bitrate, sent, len(pts), free, len(freePTS))
}

// TestTrickPlayContinuity: the packets trick play sends, tables and
// pictures taken from all over the title, carry continuity counters that
// go up by one per PID (ISO/IEC 13818-1 §2.4.3.3), forwards and
// backwards: the tables went with the same counters before every picture
// and each picture with its own, continuity errors to a receiver.
func TestTrickPlayContinuity(t *testing.T) {
	e := startEngine(t, false)
	data := loadClip(t)
	for _, tc := range []struct{ scale, from float64 }{{4, 0}, {-4, 18}} {
		srv, cli := tcpPair(t)
		st, err := e.NewStream(StreamConfig{Source: newMemSource(data), Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		st.SetScale(tc.scale)
		if _, err := st.Play(tc.from); err != nil {
			t.Fatal(err)
		}
		cli.SetReadDeadline(time.Now().Add(time.Second))
		hdr, buf := make([]byte, 4), make([]byte, 65536)
		last := ccSeen{}
		packets := 0
		for {
			p, err := nextRTP(t, cli, hdr, buf)
			if err != nil {
				break // the second ended (within a frame, or between two)
			}
			if p == nil {
				continue
			}
			if err := last.check(p.Payload, &packets); err != nil {
				st.Close()
				t.Fatalf("scale %v: %v", tc.scale, err)
			}
		}
		st.Close()
		if packets < 100 || len(last) != 3 {
			t.Fatalf("scale %v: %d packets of PIDs %v in 1 s, want pictures and the tables", tc.scale, packets, last)
		}
	}
}

// TestTrickPlayContinuityAcrossAPlayMidPicture: a PLAY that moves the
// play while a picture is half sent (a picture goes over several ticks)
// leaves the continuity counters going on by one: the rest of the picture
// was numbered as if sent, and the next picture's video packets jumped.
func TestTrickPlayContinuityAcrossAPlayMidPicture(t *testing.T) {
	data := bigPictureTitle(t) // pictures of about 0.5 MB: hundreds of ticks each at one packet a tick
	e := &Engine{Shards: 1, MaxBurst: 1}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	srv, cli := tcpPair(t)
	st, err := e.NewStream(StreamConfig{Source: newMemSource(data), Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.SetScale(4)
	if _, err := st.Play(0); err != nil {
		t.Fatal(err)
	}
	cli.SetReadDeadline(time.Now().Add(3 * time.Second))
	hdr, buf := make([]byte, 4), make([]byte, 65536)
	last := ccSeen{}
	packets, moved := 0, false
	for packets < 400 {
		p, err := nextRTP(t, cli, hdr, buf)
		if err != nil {
			t.Fatalf("after %d packets: %v", packets, err)
		}
		if p == nil {
			continue
		}
		if err := last.check(p.Payload, &packets); err != nil {
			t.Fatalf("after the PLAY %v: %v", moved, err)
		}
		if !moved && packets >= 20 {
			moved = true
			if _, err := st.Seek(2); err != nil {
				t.Fatal(err)
			}
			st.mu.Lock()
			half := st.trickAt >= 0 && st.trickSent < len(st.trickPic)
			st.mu.Unlock()
			if !half {
				t.Fatal("no picture half sent at the PLAY: the test proves nothing")
			}
			st.Resume()
		}
	}
}

// TestTrickPlayBudgetPerPlay: the title's bitrate a trick play's pictures
// spent does not hold back the next trick play's first picture: the next
// PLAY (a normal one between) starts with the budget whole. It waited for
// the earlier pictures' budget (here 20 s of it).
func TestTrickPlayBudgetPerPlay(t *testing.T) {
	e := startEngine(t, false)
	data := loadClip(t)
	idx, _ := tsindex.BuildFrom(bytes.NewReader(data))
	bitrate := int64(len(firstPicture(t, data, idx))) * 8 / 20 // bit/s: the first picture takes 20 s of it
	srv, cli := tcpPair(t)
	st, err := e.NewStream(StreamConfig{Source: newMemSource(data), Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), Bitrate: bitrate})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hdr, buf := make([]byte, 4), make([]byte, 65536)
	video := func(what string) {
		t.Helper()
		cli.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			if _, err := io.ReadFull(cli, hdr); err != nil {
				t.Fatalf("%s: no video: %v", what, err)
			}
			l := int(hdr[2])<<8 | int(hdr[3])
			if _, err := io.ReadFull(cli, buf[:l]); err != nil {
				t.Fatal(err)
			}
			var p rtp.Packet
			if hdr[1] == 0 && p.Unmarshal(buf[:l]) == nil && len(videoOf(p.Payload, idx.VideoPID)) > 0 {
				return
			}
		}
	}
	// playFrom seeks (the stream pauses), reads what the play before
	// left in the connection, and resumes at scale.
	playFrom := func(npt, scale float64) {
		t.Helper()
		st.SetScale(scale)
		if _, err := st.Seek(npt); err != nil {
			t.Fatal(err)
		}
		for {
			cli.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			if _, err := cli.Read(buf); err != nil {
				break
			}
		}
		st.Resume()
	}
	playFrom(0, 4)
	video("the first trick play")
	playFrom(5, 1)
	video("the normal play")
	playFrom(10, 4)
	video("the second trick play")
}

// ccSeen is, per PID, the continuity counter of the last TS packet seen.
type ccSeen map[uint16]byte

// check goes through the TS packets of payload, counting them in *n, and
// returns an error at the first whose counter does not follow the last
// of its PID by one (a packet with a payload; ISO/IEC 13818-1 §2.4.3.3).
func (c ccSeen) check(payload []byte, n *int) error {
	for i := 0; i+TSPacketSize <= len(payload); i += TSPacketSize {
		ts := payload[i : i+TSPacketSize]
		pid, cc := uint16(ts[1]&0x1f)<<8|uint16(ts[2]), ts[3]&0x0f
		if prev, ok := c[pid]; ok && ts[3]&0x10 != 0 && cc != (prev+1)&0x0f {
			return fmt.Errorf("packet %d, PID %d: continuity counter %d after %d", *n, pid, cc, prev)
		}
		c[pid] = cc
		*n++
	}
	return nil
}

// nextRTP reads the next interleaved frame of c (its header into hdr, its
// body into buf) and returns it as an RTP packet when it is on channel 0,
// nil for another channel (RTCP); an error when c fails (its deadline).
// A packet that does not parse fails the test.
func nextRTP(t *testing.T, c net.Conn, hdr, buf []byte) (*rtp.Packet, error) {
	t.Helper()
	if _, err := io.ReadFull(c, hdr); err != nil {
		return nil, err
	}
	l := int(hdr[2])<<8 | int(hdr[3])
	if _, err := io.ReadFull(c, buf[:l]); err != nil {
		return nil, err
	}
	if hdr[1] != 0 {
		return nil, nil
	}
	p := &rtp.Packet{}
	if err := p.Unmarshal(buf[:l]); err != nil {
		t.Fatal(err)
	}
	return p, nil
}
