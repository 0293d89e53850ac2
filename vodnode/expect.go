package vodnode

import (
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// ExpectedViewers returns how many viewers the manager has sent to the
// node for title (NodeCommand.expect) who have not arrived yet and whose
// deadline has not passed: while there is one, the node's own eviction
// (the room it makes for a fill) keeps the title (store.Store.Expect).
// For tests and programs that embed a Node (no metric shows it); 0
// before Start.
func (n *Node) ExpectedViewers(title string) int {
	if n.store == nil {
		return 0
	}
	return n.store.Expecting(title)
}

// expect applies the manager's ExpectCommand e (store.Store.Expect) unless
// its admission session already reached the node: the command travels
// over the heartbeat stream while the viewer follows its redirect, and may
// come after the viewer's SETUP or first HTTP request (whose Unexpect then
// found nothing), as may one the manager sends again with a new token for
// a viewer it does not yet know arrived. Such a session is live here (its
// title held for it) or ended or refused (its token spent: it starts no
// more); kept, its title would stay unevictable until the deadline for a
// viewer who is not coming. It reports whether the title is kept.
func (n *Node) expect(e *pb.ExpectCommand) bool {
	sid := e.GetSessionId()
	if n.arrived(sid) {
		return false
	}
	if !n.store.Expect(sid, e.GetTitleId(), time.UnixMilli(e.GetUntilUnixMs())) {
		return false
	}
	// The session may have been claimed or spent between arrived and
	// Expect: a start claims (or spends) before it calls Unexpect, so
	// either that Unexpect came after Expect, or this check sees it.
	if n.arrived(sid) {
		n.store.Unexpect(sid)
		return false
	}
	return true
}

// arrived reports whether admission session sid has a live session on the
// node or its token is spent here (ended, refused, or ended by the
// manager).
func (n *Node) arrived(sid string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, live := n.live[sid]
	_, used := n.used[sid]
	return live || used
}
