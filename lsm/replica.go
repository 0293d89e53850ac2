package lsm

import "math"

// setReplica records title on n, held (filling false) or filling, of
// bytes bytes (while filling, the largest size heard: a heartbeat reports
// the bytes stored so far, the fill was booked with the whole title). A
// fill new to n is booked (replica.booked) until a report says otherwise.
func (s *Scheduler) setReplica(n *Node, title string, filling bool, bytes int64) {
	n.viewEpoch++
	r := n.titles[title]
	if r == nil {
		r = s.newReplica()
		n.titles[title] = r
		s.holders[title] = append(s.holders[title], int32(n.Index))
		r.booked = filling // until a report shows it (Heartbeat)
	}
	if !filling {
		r.booked = false
	}
	if r.yieldsChannel() {
		n.yielding--
	}
	if r.filling {
		s.filling--
		n.filling--
	}
	if filling {
		s.filling++
		n.filling++
	}
	if r.inUse() {
		n.InUseBytes -= r.bytes
	}
	n.StoredBytes -= r.bytes
	r.filling = filling
	r.preemptible = r.preemptible && filling
	if filling {
		r.bytes = max(r.bytes, bytes)
	} else {
		r.bytes = max(0, bytes)
	}
	n.StoredBytes += r.bytes
	if !filling && r.fills > 0 {
		// The fill completed: its sessions now play from a local copy.
		n.FillSessions = max(0, n.FillSessions-r.fills)
		n.FillBps = max(0, n.FillBps-r.fillBps)
		r.fills, r.fillBps = 0, 0
	}
	if r.inUse() {
		n.InUseBytes += r.bytes
	}
	if r.yieldsChannel() {
		n.yielding++
	}
}

// setPinned records whether title, which n holds or fills, is pinned
// there: a pinned title's bytes count in n's InUseBytes, so no fill is
// placed on n counting on their room.
func (s *Scheduler) setPinned(n *Node, title string, pinned bool) {
	r := n.titles[title]
	if r == nil || r.pinned == pinned {
		return
	}
	changeInUse(n, r, func() { r.pinned = pinned })
}

// changeInUse applies change, a change of r's flags, keeping n's
// InUseBytes (r's bytes counted there while r.inUse) and bumping its view
// epoch.
func changeInUse(n *Node, r *replica, change func()) {
	n.viewEpoch++
	was := r.inUse()
	countYield(n, r, change)
	switch now := r.inUse(); {
	case was && !now:
		n.InUseBytes -= r.bytes
	case !was && now:
		n.InUseBytes += r.bytes
	}
}

// setPreemptible records whether the fill of title on n is a prefetch
// the node would stop to make room for a fill on demand
// (Holding.Preemptible): its bytes then count as room (roomBytes), not in
// n's InUseBytes, unless it is played or pinned. Nothing happens when n
// has no such title or holds it complete.
func (s *Scheduler) setPreemptible(n *Node, title string, preemptible bool) {
	r := n.titles[title]
	if r == nil || r.preemptible == preemptible || (preemptible && !r.filling) {
		return
	}
	changeInUse(n, r, func() { r.preemptible = preemptible })
}

// setStale records whether the copy of title n holds is stale
// (Holding.Stale). Nothing happens when n has no such title.
func (s *Scheduler) setStale(n *Node, title string, stale bool) {
	r := n.titles[title]
	if r == nil || r.stale == stale {
		return
	}
	n.viewEpoch++
	r.stale = stale
	if stale {
		n.stale++
	} else {
		n.stale--
	}
}

// dropReplica forgets title on n. Sessions still reserved for it stay
// reserved (they are released as usual) but no longer count as Nd.
func (s *Scheduler) dropReplica(n *Node, title string) {
	n.viewEpoch++
	r := n.titles[title]
	if r == nil {
		return
	}
	if r.inUse() {
		n.InUseBytes -= r.bytes
	}
	if r.yieldsChannel() {
		n.yielding--
	}
	if r.filling {
		s.filling--
		n.filling--
	}
	if r.stale {
		n.stale--
	}
	n.StoredBytes -= r.bytes
	n.FillSessions = max(0, n.FillSessions-r.fills)
	n.FillBps = max(0, n.FillBps-r.fillBps)
	delete(n.titles, title)
	if len(s.spare) < maxSpare {
		*r = replica{}
		s.spare = append(s.spare, r)
	}
	unindex(s.holders, title, int32(n.Index))
}

// book counts one more session of bitrate bit/s for title on n, creating
// a filling replica of bytes bytes when n has none. It reports whether the
// session needs a new fill.
func (s *Scheduler) book(n *Node, title string, bitrate, bytes int64) bool {
	r := n.titles[title]
	fill := r == nil
	if fill {
		s.setReplica(n, title, true, bytes) // the next viewer shares the fill
		r = n.titles[title]
	}
	if !r.inUse() {
		n.InUseBytes += r.bytes
	}
	countYield(n, r, func() { r.sessions++ })
	if r.filling {
		r.fills++
		r.fillBps += bitrate
		n.FillSessions++
		n.FillBps += bitrate
	}
	n.ReservedBps += bitrate
	n.Sessions++
	return fill
}

// unbook undoes book for one session; a release the node's counters
// cannot cover is counted in Anomalies and clamped at zero.
func (s *Scheduler) unbook(n *Node, title string, bitrate int64) {
	if n.ReservedBps < bitrate || n.Sessions < 1 {
		s.anomalies.UnbalancedReleases++
	}
	n.ReservedBps = max(0, n.ReservedBps-bitrate)
	n.Sessions = max(0, n.Sessions-1)
	r := n.titles[title]
	if r == nil {
		return
	}
	if r.fills > 0 {
		r.fills--
		r.fillBps = max(0, r.fillBps-bitrate)
		n.FillSessions = max(0, n.FillSessions-1)
		n.FillBps = max(0, n.FillBps-bitrate)
	}
	was := r.inUse()
	countYield(n, r, func() { r.sessions = max(0, r.sessions-1) })
	if was && !r.inUse() {
		n.InUseBytes -= r.bytes
	}
}

// diskRoom reports whether n could store a title of bytes bytes it does
// not hold, by evicting titles not in use (roomBytes); true when the
// title's size is unknown (0).
func diskRoom(n *Node, bytes int64) bool {
	return bytes <= 0 || roomBytes(n) >= bytes
}

// roomBytes returns the bytes of a new title n could store by evicting
// titles not in use: its budget (Capacity.DiskBytes) less the bytes in use
// (InUseBytes), and, when its last report gave its free disk
// (Report.DiskFreeKnown), no more than that free disk plus the bytes of
// the titles it holds but does not use (diskHolds less InUseBytes): the
// node's file system may hold less than its budget (a smaller disk, other
// files on it). math.MaxInt64 when neither bounds it (no budget, no
// report: a simulated node's free disk is its budget's).
func roomBytes(n *Node) int64 {
	room := int64(math.MaxInt64)
	if n.Capacity.DiskBytes > 0 {
		room = n.Capacity.DiskBytes - n.InUseBytes
	}
	if n.diskKnown {
		room = min(room, n.diskHolds-n.InUseBytes)
	}
	return room
}

// maxSpare bounds the records of dropped replicas kept for reuse.
const maxSpare = 4096

// newReplica returns a zero replica record, reusing a dropped one when it
// can: a fill booked and dropped again (a viewer who gives up) costs no
// allocation.
func (s *Scheduler) newReplica() *replica {
	if k := len(s.spare); k > 0 {
		r := s.spare[k-1]
		s.spare = s.spare[:k-1]
		return r
	}
	return &replica{}
}
