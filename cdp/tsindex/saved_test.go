package tsindex

import (
	"bytes"
	"testing"
)

// unabsorbed returns x as a Builder before Format 2 indexed it: the
// presentation times as the stream has them.
func unabsorbed(x *Index) *Index {
	old := *x
	old.Keyframes, old.PTSJumps = nil, nil
	for _, k := range x.Keyframes {
		k.Jump = 0
		old.Keyframes = append(old.Keyframes, k)
	}
	return &old
}

// TestMayHoldPTSJump: an index built before presentation-time jumps were
// absorbed, of a title with a 2 s intro spliced before it (its times go
// back by 2 s at the join), passes Continuous (a jump of less than twice
// MaxLeadChange) but is flagged by MayHoldPTSJump, to be built again; the
// same index of the title alone is not, nor the index built now.
func TestMayHoldPTSJump(t *testing.T) {
	sample := loadSample(t)
	var intro []byte
	for _, at := range pcrPackets(sample) {
		if x, _ := BuildFrom(bytes.NewReader(sample[:at])); x.Duration() >= 2 {
			intro = sample[:at]
			break
		}
	}
	x, err := BuildFrom(bytes.NewReader(append(bytes.Clone(intro), sample...)))
	if err != nil {
		t.Fatal(err)
	}
	if len(x.PTSJumps) != 1 || x.MayHoldPTSJump() {
		t.Fatalf("the splice indexed now: PTS jumps %v, flagged %v; want one, absorbed, not flagged", x.PTSJumps, x.MayHoldPTSJump())
	}
	old := unabsorbed(x)
	if !old.Continuous() {
		t.Fatal("the old index of a 2 s splice not Continuous: the test does not test the gap MayHoldPTSJump fills")
	}
	if !old.MayHoldPTSJump() {
		t.Error("the old index of a 2 s splice not flagged: it keeps the times that go back at the join")
	}
	clean, _ := BuildFrom(bytes.NewReader(sample))
	if unabsorbed(clean).MayHoldPTSJump() {
		t.Error("the old index of the title alone flagged: every copy would be read again")
	}
}
