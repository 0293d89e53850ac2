package deliver

import (
	"context"
	"net"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/pion/rtp"
)

// TestSTAPANRI: a STAP-A packet of the elementary-stream path carries the
// highest NRI of the NAL units it aggregates (RFC 6184 §5.7.1): 3 for the
// one with a picture's SPS and PPS (it was sent with 0).
func TestSTAPANRI(t *testing.T) {
	cli := playESFromStart(t, loadClip(t))
	deadline := time.Now().Add(3 * time.Second)
	buf := make([]byte, 65536)
	for checked := 0; checked < 3; {
		ch, b, ok := readFrame(t, cli, buf, deadline)
		if !ok {
			t.Fatalf("%d STAP-A packets in 3 s, want 3", checked)
		}
		if ch != 0 {
			continue
		}
		var p rtp.Packet
		if err := p.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		if len(p.Payload) == 0 || p.Payload[0]&0x1f != 24 {
			continue
		}
		maxNRI, types := byte(0), []byte{}
		for i := 1; i+2 <= len(p.Payload); {
			n := int(p.Payload[i])<<8 | int(p.Payload[i+1])
			i += 2
			if n == 0 || i+n > len(p.Payload) {
				break
			}
			maxNRI = max(maxNRI, p.Payload[i]>>5&3)
			types = append(types, p.Payload[i]&0x1f)
			i += n
		}
		if got := p.Payload[0] >> 5 & 3; got != maxNRI {
			t.Fatalf("STAP-A (seq %d) with NAL types %v: NRI %d, want %d", p.SequenceNumber, types, got, maxNRI)
		}
		if slices.Contains(types, 7) && maxNRI == 0 {
			t.Fatalf("STAP-A (seq %d) with NAL types %v: an SPS with NRI 0", p.SequenceNumber, types)
		}
		checked++
	}
}

// TestAACFragmentAUSize: an AAC access unit larger than a packet (5.1 at
// 768 kbit/s: frames of about 1.7 kB) goes in fragments that each carry
// the whole access unit's size as AU-size (RFC 3640 §3.2.1.1; ffmpeg
// reassembles by it), not the fragment's own length.
func TestAACFragmentAUSize(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	data, err := exec.CommandContext(ctx, "ffmpeg", "-v", "error", "-i", "../../cdp/samples/clip-a.ts",
		"-f", "lavfi", "-t", "4", "-i", "anoisesrc=sample_rate=48000:amplitude=0.8",
		"-filter_complex", "[1:a]pan=5.1|c0=c0|c1=c0|c2=c0|c3=c0|c4=c0|c5=c0[a]",
		"-map", "0:v", "-map", "[a]", "-t", "4", "-c:v", "copy", "-c:a", "aac", "-b:a", "768k", "-f", "mpegts", "pipe:1").Output()
	if err != nil || len(data) == 0 {
		t.Fatalf("ffmpeg: %v", err)
	}
	cli := playESFromStart(t, data)
	deadline := time.Now().Add(3 * time.Second)
	buf := make([]byte, 65536)
	type frag struct{ auSize, dataLen int }
	var run []frag
	var runTS uint32
	for checked := 0; checked < 3; {
		ch, b, ok := readFrame(t, cli, buf, deadline)
		if !ok {
			t.Fatalf("%d fragmented AAC access units in 3 s, want 3", checked)
		}
		if ch != 2 {
			continue
		}
		var p rtp.Packet
		if err := p.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		pl := p.Payload
		if int(pl[0])<<8|int(pl[1]) != 16 {
			run = nil
			continue
		}
		if len(run) > 0 && p.Timestamp != runTS {
			run = nil
		}
		runTS = p.Timestamp
		run = append(run, frag{int(pl[2])<<5 | int(pl[3])>>3, len(pl) - 4})
		if !p.Marker {
			continue
		}
		if len(run) > 1 {
			total := 0
			for _, r := range run {
				total += r.dataLen
			}
			for i, r := range run {
				if r.auSize != total {
					t.Fatalf("AU of %d bytes in %d fragments: fragment %d carries AU-size %d (its own length %d), want %d", total, len(run), i, r.auSize, r.dataLen, total)
				}
			}
			checked++
		}
		run = nil
	}
}

// playESFromStart plays title as elementary streams over an interleaved
// TCP pair from its start (playESOverTCP) and returns the client's end.
func playESFromStart(t *testing.T, title []byte) net.Conn {
	t.Helper()
	st, _, cli := playESOverTCP(t, startEngine(t, false), newMemSource(title))
	if _, err := st.Seek(0); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	return cli
}
