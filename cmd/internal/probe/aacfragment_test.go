package probe

import (
	"bytes"
	"testing"

	"github.com/bluenviron/gortsplib/v4/pkg/format"
	"github.com/bluenviron/gortsplib/v4/pkg/format/rtpmpeg4audio"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
)

// TestFragmentAUSize: an AAC access unit sent in fragments that carry the
// whole access unit's size as AU-size (RFC 3640 §3.2.1.1, as the nodes
// send it) is counted by the probe: gortsplib's decoder, which wants each
// fragment's own length, gets it back whole.
func TestFragmentAUSize(t *testing.T) {
	f := &format.MPEG4Audio{PayloadTyp: 97, Config: &mpeg4audio.AudioSpecificConfig{Type: mpeg4audio.ObjectTypeAACLC, SampleRate: 48000, ChannelCount: 6},
		SizeLength: 13, IndexLength: 3, IndexDeltaLength: 3}
	enc := &rtpmpeg4audio.Encoder{PayloadType: 97, SizeLength: 13, IndexLength: 3, IndexDeltaLength: 3, PayloadMaxSize: 1000}
	if err := enc.Init(); err != nil {
		t.Fatal(err)
	}
	au := bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7}, 300) // 2,100 bytes: 3 fragments
	pkts, err := enc.Encode([][]byte{au})
	if err != nil || len(pkts) < 2 {
		t.Fatalf("%d packets (%v), want fragments", len(pkts), err)
	}
	for _, p := range pkts { // as RFC 3640 has it: the whole AU's size
		p.Payload[2], p.Payload[3] = byte(len(au)>>5), byte(len(au)<<3)
	}
	d, err := f.CreateDecoder()
	if err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	for _, p := range pkts {
		fragmentAUSize(p, f.SizeLength, f.IndexLength)
		if aus, err := d.Decode(p); err == nil {
			got = append(got, aus...)
		}
	}
	if len(got) != 1 || !bytes.Equal(got[0], au) {
		t.Fatalf("decoded %d access units, want the one of %d bytes", len(got), len(au))
	}
}
