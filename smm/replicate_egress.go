package smm

// Egress. A node whose egress (NodeView.EgressBps) is less than a title's
// bitrate (TitleInfo.Bitrate), both known (> 0), can never stream one
// viewer of it (the manager's admission refuses such a reservation, and
// the manager refuses to fill a title there): the Replicator plans no
// replica of the title there (not even for a pin to that node, nor on a
// copy it holds), orders no prefetch of it there, ChooseNode does not
// pick it, and the title's replica count is computed over the nodes that
// can stream it (their number and mean egress, capRef). A title no alive
// node can stream gets no replica and no prefetch. When every alive node
// can stream a title (the usual case: titles well below a node's
// egress), its plan is computed exactly as without this rule.

// tooSmall reports whether node v's egress is less than the bitrate of
// title info, both known (> 0): no viewer of it could be played there.
func tooSmall(v *NodeView, info TitleInfo) bool {
	return v != nil && v.EgressBps > 0 && info.Bitrate > 0 && info.Bitrate > v.EgressBps
}

// cannotStream is tooSmall for ns (nil: false).
func cannotStream(ns *nodeState, info TitleInfo) bool {
	return ns != nil && tooSmall(ns.v, info)
}

// minEgress returns the smallest known (> 0) egress of nodes, bit/s; 0
// when none is known. A title whose bitrate is at most that (or unknown)
// can be streamed by every one of nodes (tooSmall is false for each).
func minEgress(nodes []*nodeState) int64 {
	var lo int64
	for _, ns := range nodes {
		if e := ns.v.EgressBps; e > 0 && (lo == 0 || e < lo) {
			lo = e
		}
	}
	return lo
}

// someTooSmall reports whether a node whose smallest known egress is lo
// (minEgress) is too small for info.
func someTooSmall(info TitleInfo, lo int64) bool {
	return lo > 0 && info.Bitrate > lo
}

// streamers returns the nodes of nodes that can stream info (tooSmall
// false), in their order, in a new slice.
func streamers(nodes []*nodeState, info TitleInfo) []*nodeState {
	out := make([]*nodeState, 0, len(nodes))
	for _, ns := range nodes {
		if !tooSmall(ns.v, info) {
			out = append(out, ns)
		}
	}
	return out
}

// unplayableCopies returns the copies of alive's nodes (node, title) that
// are on a node too small to stream their title (tooSmall, titles the
// view's catalog), nil when none: they are no copies for Copies (a
// viewer of the title is never sent there). A node's copies are looked
// up in the catalog only when its egress is less than the catalog's
// highest bitrate.
func unplayableCopies(alive []*nodeState, titles map[string]TitleInfo) map[fillKey]bool {
	lo := minEgress(alive)
	if lo == 0 {
		return nil
	}
	var hi int64
	for _, t := range titles {
		hi = max(hi, t.Bitrate)
	}
	if hi <= lo {
		return nil
	}
	var out map[fillKey]bool
	for _, ns := range alive {
		if e := ns.v.EgressBps; e <= 0 || e >= hi {
			continue
		}
		for t := range ns.items {
			if info, ok := titles[t]; ok && tooSmall(ns.v, info) {
				if out == nil {
					out = map[fillKey]bool{}
				}
				out[fillKey{ns.v.ID, t}] = true
			}
		}
	}
	return out
}
