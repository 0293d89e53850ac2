package vodnode

// evictReasonOperator is the EvictCommand reason of the operator's
// eviction (the manager's Admin.Evict: vodctl evict).
const evictReasonOperator = "operator"

// evict carries out the manager's eviction of title id for reason
// (pb.EvictCommand.reason). The operator's also cancels a prefetch of it
// filling that no viewer reads, is on its way for or pins (the one a
// fill on demand would stop for its room: store.Status.Preemptible): the
// fill stops, its bytes are dropped, and its end asks for a load report
// at once (fillEnded), which no longer lists the title; cancelled says
// so. The others (planner, room, stale, withdrawn) never stop a fill.
// Errors are the store's: store.ErrUnknownTitle, store.ErrInUse (a
// reader holds it, or its fill is not one the eviction cancels: an
// eviction never cuts a playing session).
func (n *Node) evict(id, reason string) (cancelled bool, err error) {
	if reason != evictReasonOperator {
		return false, n.store.Evict(id)
	}
	cancelled, _, err = n.store.EvictOrCancel(id)
	return cancelled, err
}
