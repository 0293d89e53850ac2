package tsindex

// What an Index saved by an earlier Builder is checked for before it is
// used again.

// Continuous reports whether x's clock never goes back nor leaps past
// MaxPCRStep: false for an index built before discontinuities were
// absorbed (Builder), which is to be built again.
func (x *Index) Continuous() bool {
	for i := 1; i < len(x.PCRs); i++ {
		if step := x.PCRs[i].PCR - x.PCRs[i-1].PCR; step < 0 || step > MaxPCRStep {
			return false
		}
	}
	// Presentation times: a keyframe's lead over the clock moves by less
	// than MaxLeadChange between two pictures once absorbed; twice that
	// between two keyframes leaves room for the clock interpolated here
	// and extrapolated by the Builder.
	prev, have := int64(0), false
	for _, k := range x.Keyframes {
		c, ok := x.ClockAt(k.Offset)
		if k.PTS < 0 || !ok {
			continue
		}
		lead := k.Time() - c/300
		if have && (lead-prev > 2*MaxLeadChange || prev-lead > 2*MaxLeadChange) {
			return false
		}
		prev, have = lead, true
	}
	return true
}

// Format numbers the rules a Builder indexes by: 2 absorbs the
// discontinuities of the video's presentation times (Keyframe.Jump,
// PTSJumps) as well as the clock's. A caller that saves an Index saves
// its Format with it, and checks one saved under an earlier Format with
// MayHoldPTSJump.
const Format = 2

// MayHoldPTSJump reports whether x, built under a Format before 2, may
// hold a discontinuity of the presentation times it did not absorb: two
// keyframes in a row whose time goes back by more than 100 ms, or whose
// lead over the clock changes by more than MaxLeadChange (the Builder's
// rule for two pictures, applied between keyframes; a title so flagged
// that has no jump is only read again). Continuous sees only the jumps
// of more than twice MaxLeadChange.
func (x *Index) MayHoldPTSJump() bool {
	var prevT, prevLead int64
	have := false
	for _, k := range x.Keyframes {
		c, ok := x.ClockAt(k.Offset)
		if k.PTS < 0 || !ok {
			continue
		}
		t := k.Time()
		lead := t - c/300
		if have && (t < prevT-PTSHz/10 || lead-prevLead > MaxLeadChange || prevLead-lead > MaxLeadChange) {
			return true
		}
		prevT, prevLead, have = t, lead, true
	}
	return false
}
