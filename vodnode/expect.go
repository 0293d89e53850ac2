package vodnode

// ExpectedViewers returns how many viewers the manager has sent to the
// node for title (NodeCommand.expect) who have not arrived yet and whose
// deadline has not passed: while there is one, the node's own eviction
// (the room it makes for a fill) keeps the title (store.Store.Expect).
// For the operator and tests; 0 before Start.
func (n *Node) ExpectedViewers(title string) int {
	if n.store == nil {
		return 0
	}
	return n.store.Expecting(title)
}
