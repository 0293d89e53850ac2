package deliver

import (
	"bytes"
	"testing"
)

// ContinuePSI keeps what it found before bytes that are not a TS packet
// (lost sync within the look-ahead): the PAT seen before them gets its
// counter, the PMT not seen keeps its own, as its doc says of a table not
// found.
func TestContinuePSIBeforeLostSync(t *testing.T) {
	const pmt = 4096
	pkt := func(pid uint16, cc byte) []byte {
		p := make([]byte, TSPacketSize)
		p[0], p[1], p[2], p[3] = 0x47, byte(pid>>8)&0x1f, byte(pid), 0x10|cc&0x0f
		return p
	}
	garbage := make([]byte, TSPacketSize) // no sync byte
	stream := append(append(pkt(0, 9), garbage...), pkt(pmt, 3)...)
	psi := append(pkt(0, 0), pkt(pmt, 6)...)
	ContinuePSI(psi, bytes.NewReader(stream), 0, pmt)
	if pat, pm := psi[3]&0x0f, psi[TSPacketSize+3]&0x0f; pat != 8 || pm != 6 {
		t.Fatalf("counters PAT %d PMT %d, want 8 (before the PAT found, 9) and 6 (kept: not reached)", pat, pm)
	}
}
