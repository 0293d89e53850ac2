package deliver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"vodcluster/cdp/tsindex"
)

func startEngine(t *testing.T, udp bool) *Engine {
	t.Helper()
	e := &Engine{Shards: 2}
	if udp {
		u, err := ListenUDP("127.0.0.1", 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { u.Close() })
		e.UDP = u
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func listenUDP(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadBuffer(4 << 20)
	t.Cleanup(func() { c.Close() })
	return c
}

type ended struct {
	reason EndReason
	err    error
}

// TestUDPPacedRTP plays 2 s of the sample over RTP/UDP, with and without
// UDP GSO, and checks the packets (payload type, sequence, timestamps, TS
// content), the pacing and the final RTCP BYE.
func TestUDPPacedRTP(t *testing.T) {
	for _, gso := range []bool{true, false} {
		t.Run(fmt.Sprintf("gso=%v", gso), func(t *testing.T) { testUDPPacedRTP(t, gso) })
	}
}

func testUDPPacedRTP(t *testing.T, gso bool) {
	e := startEngine(t, true)
	if gso && !e.UDP.gso {
		t.Skip("the kernel has no UDP GSO")
	}
	e.UDP.gso = gso
	data := prefix(t, loadClip(t), 2)
	rtpc, rtcpc := listenUDP(t), listenUDP(t)
	done := make(chan ended, 1)
	st, err := e.NewStream(StreamConfig{
		Source: newMemSource(data), Mode: RTPUDP,
		Dest: rtpc.LocalAddr().(*net.UDPAddr), RTCPDest: rtcpc.LocalAddr().(*net.UDPAddr),
		SSRC: 0x1234, Seq: 65530, TSBase: 1000,
		OnEnd: func(r EndReason, err error) { done <- ended{r, err} },
	})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	info, err := st.Play(0)
	if err != nil || info.Seq != 65530 || info.RTPTime != 1000 {
		t.Fatalf("play: %+v %v", info, err)
	}
	var got []byte
	var pkts []rtp.Packet
	buf := make([]byte, 2048)
	for len(got) < len(data) {
		rtpc.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, _, err := rtpc.ReadFrom(buf)
		if err != nil {
			t.Fatalf("after %d of %d bytes: %v", len(got), len(data), err)
		}
		var p rtp.Packet
		if err := p.Unmarshal(buf[:n]); err != nil {
			t.Fatal(err)
		}
		pkts = append(pkts, p)
		got = append(got, p.Payload...)
	}
	elapsed := time.Since(start)
	if !bytes.Equal(got, data) {
		t.Fatal("payload differs from the title bytes")
	}
	if elapsed < 1500*time.Millisecond || elapsed > 4*time.Second {
		t.Errorf("2 s of media took %v", elapsed)
	}
	for i, p := range pkts {
		if p.PayloadType != PayloadType || p.SSRC != 0x1234 || p.Marker || p.SequenceNumber != uint16(65530+i) {
			t.Fatalf("packet %d: %+v", i, p.Header)
		}
		if len(p.Payload) != PayloadSize && i != len(pkts)-1 {
			t.Fatalf("packet %d payload %d bytes", i, len(p.Payload))
		}
		if i > 0 && int32(p.Timestamp-pkts[i-1].Timestamp) < 0 {
			t.Fatalf("timestamp goes back at %d", i)
		}
	}
	// 90 kHz clock over 2 s
	if span := pkts[len(pkts)-1].Timestamp - pkts[0].Timestamp; span < 170000 || span > 190000 {
		t.Errorf("RTP timestamp span %d, want about 180000", span)
	}
	select {
	case d := <-done:
		if d.reason != EndOfTitle || d.err != nil {
			t.Fatalf("end %+v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no end of title")
	}
	// RTCP: sender report(s) then BYE
	sawBye := false
	for !sawBye {
		rtcpc.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, _, err := rtcpc.ReadFrom(buf)
		if err != nil {
			t.Fatalf("no RTCP BYE: %v", err)
		}
		ps, err := rtcp.Unmarshal(buf[:n])
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if _, ok := p.(*rtcp.Goodbye); ok {
				sawBye = true
			}
		}
	}
	if st.BytesSent() < int64(len(data)) || e.BytesSent() < st.BytesSent() {
		t.Errorf("bytes sent %d / %d for %d", st.BytesSent(), e.BytesSent(), len(data))
	}
}

// readFrames reads interleaved frames from r, returning RTP payload bytes
// per channel, until want payload bytes arrived or the deadline.
func readFrames(t *testing.T, c net.Conn, want int, deadline time.Duration) (media []byte, rtcpFrames int, firstAt time.Time) {
	t.Helper()
	start := time.Now()
	c.SetReadDeadline(start.Add(deadline))
	hdr := make([]byte, 4)
	buf := make([]byte, 65536)
	for len(media) < want {
		if _, err := io.ReadFull(c, hdr); err != nil {
			t.Fatalf("after %d bytes: %v", len(media), err)
		}
		if hdr[0] != '$' {
			t.Fatalf("frame starts with %q", hdr[0])
		}
		l := int(hdr[2])<<8 | int(hdr[3])
		if _, err := io.ReadFull(c, buf[:l]); err != nil {
			t.Fatal(err)
		}
		if hdr[1] == 1 {
			rtcpFrames++
			continue
		}
		var p rtp.Packet
		if err := p.Unmarshal(buf[:l]); err != nil {
			t.Fatal(err)
		}
		if firstAt.IsZero() {
			firstAt = time.Now()
		}
		media = append(media, p.Payload...)
	}
	return media, rtcpFrames, firstAt
}

func tcpPair(t *testing.T) (server, client net.Conn) {
	return tcpPairBuf(t, 0)
}

// tcpPairBuf connects a loopback pair; rcvbuf > 0 sets the client's receive
// buffer (before connecting, so that the window stays small).
func tcpPairBuf(t *testing.T, rcvbuf int) (server, client net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d := net.Dialer{}
	if rcvbuf > 0 {
		d.Control = func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) {
				syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
			})
		}
	}
	client, err = d.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// TestTCPPauseSeek plays over interleaved TCP, pauses (nothing flows),
// resumes where it stopped, then seeks to a keyframe.
func TestTCPPauseSeek(t *testing.T) {
	e := startEngine(t, false)
	data := loadClip(t)
	srv, cli := tcpPair(t)
	cw := NewConnWriter(srv, 0, 0)
	st, err := e.NewStream(StreamConfig{Source: newMemSource(data), Mode: RTPTCP, Conn: cw, SSRC: 7})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Play(0); err != nil {
		t.Fatal(err)
	}
	got, _, _ := readFrames(t, cli, 200*PayloadSize, 5*time.Second)
	pos := st.Pause()
	if pos <= 0 {
		t.Fatalf("paused at %v", pos)
	}
	// drain what was sent before the pause, then nothing more may come
	cli.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	rest, _ := io.ReadAll(cli)
	_ = rest
	cli.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, _ := cli.Read(make([]byte, 1)); n != 0 {
		t.Fatal("media flows while paused")
	}
	info, err := st.Play(-1)
	if err != nil {
		t.Fatal(err)
	}
	if d := info.NPT - pos; d < -0.01 || d > 0.01 {
		t.Fatalf("resumed at %.3f, paused at %.3f", info.NPT, pos)
	}
	more, _, _ := readFrames(t, cli, PayloadSize, 2*time.Second)
	_ = got
	_ = more
	// seek: 10.5 s → the keyframe at 10 s
	info, err = st.Play(10.5)
	if err != nil {
		t.Fatal(err)
	}
	if info.NPT < 9.5 || info.NPT > 10.5 {
		t.Fatalf("seek to 10.5 s gave %.3f", info.NPT)
	}
	if _, err := st.Play(25); !errors.Is(err, ErrRange) {
		t.Fatalf("seek past the end: %v", err)
	}
	st.Close()
}

// TestFillingSourceWaits streams a title that is revealed in steps: the
// stream parks when it catches up and resumes as soon as bytes arrive.
func TestFillingSourceWaits(t *testing.T) {
	e := startEngine(t, false)
	data := prefix(t, loadClip(t), 3)
	src := newFillingSource(data)
	srv, cli := tcpPair(t)
	done := make(chan ended, 1)
	st, err := e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0),
		OnEnd: func(r EndReason, err error) { done <- ended{r, err} }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Play(0); err != nil {
		t.Fatal(err)
	}
	revealed := make(chan time.Time, 1) // when the first bytes were revealed
	go func() {
		time.Sleep(200 * time.Millisecond)
		revealed <- time.Now()
		for n := 0; n < len(data); {
			n = min(n+64*1024, len(data))
			src.reveal(n)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	got, _, first := readFrames(t, cli, len(data), 10*time.Second)
	if !bytes.Equal(got, data) {
		t.Fatal("payload differs")
	}
	if at := <-revealed; first.Before(at) || first.Sub(at) > 2*time.Second {
		t.Errorf("first media %v after the first bytes were revealed", first.Sub(at))
	}
	select {
	case d := <-done:
		if d.reason != EndOfTitle {
			t.Fatalf("end %+v", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no end")
	}
}

// TestFailedFillEndsStream checks that a fill error ends the stream once
// it has played the bytes the fill left (every one of them), and that the
// client gets an RTCP BYE saying so.
func TestFailedFillEndsStream(t *testing.T) {
	e := startEngine(t, false)
	src := newFillingSource(loadClip(t))
	srv, cli := tcpPair(t)
	done := make(chan ended, 1)
	st, _ := e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0),
		OnEnd: func(r EndReason, err error) { done <- ended{r, err} }})
	st.Play(0)
	src.mu.Lock()
	src.err = errors.New("origin gone")
	src.mu.Unlock()
	src.reveal(188 * 100)
	select {
	case d := <-done:
		if d.reason != EndError || d.err == nil {
			t.Fatalf("end %+v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stream did not end")
	}
	// The interleaved frames up to the BYE on the RTCP channel: the media
	// before it are the bytes the fill left.
	cli.SetReadDeadline(time.Now().Add(5 * time.Second))
	hdr, buf := make([]byte, 4), make([]byte, 65536)
	media := 0
	for {
		if _, err := io.ReadFull(cli, hdr); err != nil {
			t.Fatalf("no RTCP BYE after the failed fill: %v", err)
		}
		l := int(hdr[2])<<8 | int(hdr[3])
		if _, err := io.ReadFull(cli, buf[:l]); err != nil {
			t.Fatal(err)
		}
		if hdr[1] != 1 {
			media += l - 12 // the RTP header
			continue
		}
		ps, err := rtcp.Unmarshal(buf[:l])
		if err != nil {
			t.Fatalf("RTCP frame: %v", err)
		}
		for _, p := range ps {
			if b, ok := p.(*rtcp.Goodbye); ok {
				if b.Reason != "fill failed" {
					t.Fatalf("BYE reason %q", b.Reason)
				}
				if media != 188*100 {
					t.Fatalf("%d bytes of media before the BYE, want the %d the fill left", media, 188*100)
				}
				return
			}
		}
	}
}

// TestSlowTCPReader: a client reading slower than the title's bitrate
// (a link too slow for it) is ended after MaxLag and does not hold back
// another stream of the same shard. (One that stopped reading, its host
// alive, waits: TestTCPPlayerPausedWithoutPAUSE in vodnode.)
func TestSlowTCPReader(t *testing.T) {
	e := &Engine{Shards: 1, MaxLag: 300 * time.Millisecond}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	data := loadClip(t)
	slowSrv, slowCli := tcpPairBuf(t, 4096)
	go func() { // 512 bytes every 20 ms: 25 kB/s, a third of the clip's bitrate
		var b [512]byte
		for {
			if _, err := io.ReadFull(slowCli, b[:]); err != nil {
				return // reset as a slow client, or closed at the test's end
			}
			time.Sleep(20 * time.Millisecond) // the link's pace, not a wait for an event
		}
	}()
	slowSrv.(*net.TCPConn).SetWriteBuffer(4096)
	done := make(chan ended, 1)
	slow, _ := e.NewStream(StreamConfig{Source: newMemSource(data), Mode: RTPTCP,
		Conn: NewConnWriter(slowSrv, 64<<10, 0), OnEnd: func(r EndReason, err error) { done <- ended{r, err} }})
	fastSrv, fastCli := tcpPair(t)
	fast, _ := e.NewStream(StreamConfig{Source: newMemSource(data), Mode: RTPTCP, Conn: NewConnWriter(fastSrv, 0, 0)})
	slow.Play(0)
	fast.Play(0)
	got, _, _ := readFrames(t, fastCli, 200<<10, 5*time.Second)
	if len(got) < 200<<10 {
		t.Fatal("fast reader starved")
	}
	select {
	case d := <-done:
		if d.reason != EndSlow {
			t.Fatalf("end %+v", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("slow reader never ended")
	}
}

func TestClockInverse(t *testing.T) {
	x, _ := tsindex.BuildFrom(bytes.NewReader(loadClip(t)))
	ck := clockOf{idx: x}
	for off := int64(0); off < x.Size; off += 188 * 97 {
		c := ck.at(off)
		if back := ck.offset(c); back < off-188 || back > off+188 {
			t.Fatalf("offset(at(%d)) = %d", off, back)
		}
	}
	noPCR := clockOf{idx: &tsindex.Index{}, bitrate: 8 * tsindex.PCRHz}
	if noPCR.at(100) != 100 || noPCR.offset(100) != 100 {
		t.Fatal("bitrate clock")
	}
}

// TestSeekIntoUnfilledPart: a seek past the bytes filled so far goes by
// the bitrate; one so far that the offset would overflow is ErrRange.
func TestSeekIntoUnfilledPart(t *testing.T) {
	e := startEngine(t, false)
	data := prefix(t, loadClip(t), 3)
	src := newFillingSource(data)
	src.reveal(len(data) / 2)
	srv, _ := tcpPair(t)
	st, err := e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), Bitrate: 1_000_000})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, npt := range []float64{1e300, 1e12} {
		if _, err := st.Play(npt); !errors.Is(err, ErrRange) {
			t.Fatalf("seek to %g s into the unfilled part: %v, want ErrRange", npt, err)
		}
	}
	// Until the fill reaches it, the position is the time asked (it read
	// the offset the bitrate gave, or 0 before the clock was known).
	if _, err := st.Play(2.5); err != nil {
		t.Fatal(err)
	}
	if got := st.Position(); got != 2.5 {
		t.Errorf("position after a seek to 2.5 s into the unfilled part: %.3f", got)
	}
}

// sampleSeekTarget is a time of the sample clip between two of its
// keyframes, well after the one before it, seconds.
const sampleSeekTarget = 12.3

// sampleKeyframeBefore returns the sample clip, its index, and the offset
// (bytes) and npt (seconds) of its keyframe at or before sampleSeekTarget.
func sampleKeyframeBefore(t *testing.T) (data []byte, full *tsindex.Index, off int64, npt float64) {
	t.Helper()
	data = loadClip(t)
	full, err := tsindex.BuildFrom(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	off, npt = clockOf{idx: full}.keyframeBefore(sampleSeekTarget)
	if off < 0 || npt >= sampleSeekTarget-0.1 {
		t.Fatalf("sample: keyframe before %g s at %d (%.3f s), want one well before", sampleSeekTarget, off, npt)
	}
	return data, full, off, npt
}

// TestSeekIntoUnfilledPartStartsAtKeyframe: a seek past the bytes filled
// so far starts, once the fill reaches it, at the keyframe presented at or
// before the asked time (after the PAT and PMT), not in the middle of a
// picture at the offset the bitrate gave.
func TestSeekIntoUnfilledPartStartsAtKeyframe(t *testing.T) {
	e := startEngine(t, false)
	data, full, kfOff, kfNPT := sampleKeyframeBefore(t)
	const target = sampleSeekTarget
	src := newFillingSource(data)
	src.reveal(len(data) / 4)
	srv, cli := tcpPair(t)
	st, err := e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), SSRC: 7, Bitrate: full.Bitrate()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Play(target); err != nil {
		t.Fatal(err)
	}
	go func() { // the fill goes on, in steps
		for i := 1; i <= 8; i++ {
			time.Sleep(10 * time.Millisecond)
			src.reveal(len(data)/4 + i*(len(data)-len(data)/4)/8)
		}
	}()
	media, _, _ := readFrames(t, cli, 20*PayloadSize, 5*time.Second)
	for i := 0; i+TSPacketSize <= len(media); i += TSPacketSize {
		p := media[i : i+TSPacketSize]
		if pid := uint16(p[1]&0x1f)<<8 | uint16(p[2]); pid != full.VideoPID {
			continue
		}
		if !bytes.Equal(p, data[kfOff:kfOff+TSPacketSize]) {
			t.Fatalf("the first video packet after the seek to %g s is not the keyframe at %.3f s (offset %d)", target, kfNPT, kfOff)
		}
		return
	}
	t.Fatal("no video packet after the seek")
}
