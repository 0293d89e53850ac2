package deliver

import (
	"bytes"
	"testing"
	"time"

	"vodcluster/cdp/tsindex"
)

// After a seek the PAT and PMT sent before the keyframe continue into the
// stream: each table's continuity counter goes up by one from packet to
// packet (ffmpeg logged "Continuity check failed for pid 0" after every
// RTSP seek; an operator's TR 101 290 probe counts such errors).
func TestSeekPSIContinuity(t *testing.T) {
	e := startEngine(t, false)
	data := loadClip(t)
	idx, err := tsindex.BuildFrom(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	srv, cli := tcpPair(t)
	st, err := e.NewStream(StreamConfig{Source: newMemSource(data), Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), SSRC: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Play(10.5); err != nil {
		t.Fatal(err)
	}
	media, _, _ := readFrames(t, cli, 60*PayloadSize, 5*time.Second)
	seen := map[uint16]int{} // PID -> packets with a payload seen
	last := map[uint16]byte{}
	for i := 0; i+TSPacketSize <= len(media); i += TSPacketSize {
		p := media[i : i+TSPacketSize]
		pid := uint16(p[1]&0x1f)<<8 | uint16(p[2])
		if (pid != 0 && pid != idx.PMTPID) || p[3]&0x10 == 0 {
			continue
		}
		cc := p[3] & 0x0f
		if seen[pid] > 0 && cc != (last[pid]+1)&0x0f {
			t.Fatalf("PID %d: packet %d of the table has continuity counter %d after %d", pid, seen[pid]+1, cc, last[pid])
		}
		seen[pid]++
		last[pid] = cc
	}
	if seen[0] < 2 || seen[idx.PMTPID] < 2 {
		t.Fatalf("PAT packets %d, PMT packets %d after the seek: want the injected ones and the stream's", seen[0], seen[idx.PMTPID])
	}
}

// ContinuePSI sets each table's counter to one less than its next packet
// with a payload at the offset (packets without a payload do not count:
// ISO/IEC 13818-1 §2.4.3.3), and leaves a table it does not find
// as it was; an HLS segment without its own tables gets such copies.
func TestContinuePSI(t *testing.T) {
	pkt := func(pid uint16, cc byte, payload bool) []byte {
		p := make([]byte, TSPacketSize)
		p[0], p[1], p[2] = 0x47, byte(pid>>8)&0x1f, byte(pid)
		p[3] = cc & 0x0f
		if payload {
			p[3] |= 0x10
		} else {
			p[3] |= 0x20 // adaptation field only
		}
		return p
	}
	const pmt = 4096
	psi := append(pkt(0, 0, true), pkt(pmt, 0, true)...)
	var stream []byte
	for _, p := range [][]byte{pkt(256, 3, true), pkt(0, 7, false), pkt(0, 5, true), pkt(257, 1, true), pkt(pmt, 0, true)} {
		stream = append(stream, p...)
	}
	ContinuePSI(psi, bytes.NewReader(stream), 0, pmt)
	if pat, pm := psi[3]&0x0f, psi[TSPacketSize+3]&0x0f; pat != 4 || pm != 15 {
		t.Fatalf("counters PAT %d PMT %d, want 4 (before 5) and 15 (before 0)", pat, pm)
	}
	if psi[3]&0x30 != 0x10 || psi[TSPacketSize+3]&0x30 != 0x10 {
		t.Fatal("the adaptation and payload bits changed")
	}
	psi = append(pkt(0, 2, true), pkt(pmt, 6, true)...)
	ContinuePSI(psi, bytes.NewReader(stream[:2*TSPacketSize]), 0, pmt) // neither table with a payload ahead
	if psi[3]&0x0f != 2 || psi[TSPacketSize+3]&0x0f != 6 {
		t.Fatalf("tables not found ahead changed: %d %d", psi[3]&0x0f, psi[TSPacketSize+3]&0x0f)
	}
}
