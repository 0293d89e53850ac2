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
