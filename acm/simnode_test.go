package acm

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// simNode is a fake node that carries out the manager's commands on a
// disk of its own (titles as *pb.StoredTitle, replaced, never changed in
// place, since reports share them): a prefetch starts a fill (or is
// refused and reported failed while failing is set), an evict removes an
// idle title (never one playing or filling, but with preemptible the
// operator's cancels a prefetch filling that no session plays). Fills complete when the test
// says so (complete), or at once with autoComplete.
type simNode struct {
	*fakeNode
	disk  int64
	sizes map[string]int64

	smu          sync.Mutex
	log          []string // commands in arrival order: "prefetch t1", "evict t2"
	failing      bool     // prefetches are refused and reported failed
	deaf         bool     // prefetches are ignored (never started, never reported)
	autoComplete bool     // prefetches complete at once
	doubles      []string // prefetches of a title already on the disk (a second fill)
	protects     []int    // the index in log at which each ProtectCommand came
	preemptible  bool     // simOpts.preemptible
}

// simOpts configures a simNode.
type simOpts struct {
	disk   int64             // bytes, default 100 MB
	egress int64             // bit/s, default 10 titles
	held   []*pb.StoredTitle // on its disk at registration
	// noOrigin: it registers without an origin (RegisterRequest.no_origin).
	noOrigin bool
	// before runs before the node takes its first command.
	before func(*simNode)
	// preemptible: its prefetches filling that no session plays are
	// reported preemptible, as a real node's are (store.Status), and the
	// operator's eviction (reason "operator") cancels them, as a real
	// node's does (store.EvictOrCancel).
	preemptible bool
}

// startSimNode registers a simNode whose titles have the sizes of titles.
func (e *env) startSimNode(id string, titles []*pb.Title, o simOpts) *simNode {
	e.t.Helper()
	if o.disk == 0 {
		o.disk = 100_000_000
	}
	sizes := map[string]int64{}
	for _, t := range titles {
		sizes[t.GetId()] = t.GetSizeBytes()
	}
	var used int64
	for _, h := range o.held {
		used += h.GetSizeBytes()
	}
	// Commands are applied as the stream receives them, in order, before
	// the node's next report (a goroutine hop between them let two reports
	// go out before an order was applied on a loaded machine, and the
	// manager read the second as the node declining it).
	var n *simNode
	ready := make(chan struct{})
	apply := func(c *pb.NodeCommand) {
		<-ready // the node is set up (before)
		n.apply(c)
	}
	fn := e.startNode(id, nodeOpts{disk: o.disk, diskFree: max(o.disk-used, 1), titles: o.held, egress: o.egress, onCommand: apply, noOrigin: o.noOrigin})
	n = &simNode{fakeNode: fn, disk: o.disk, sizes: sizes, preemptible: o.preemptible}
	if o.before != nil {
		o.before(n)
	}
	close(ready)
	e.t.Cleanup(fn.stop)
	return n
}

func (n *simNode) apply(c *pb.NodeCommand) {
	n.smu.Lock()
	defer n.smu.Unlock()
	switch {
	case c.GetPrefetch() != nil:
		id := c.GetPrefetch().GetTitleId()
		n.log = append(n.log, "prefetch "+id)
		if n.deaf {
			return
		}
		if n.failing {
			n.mu.Lock()
			n.failed = append(n.failed, &pb.FillFailure{TitleId: id, Reason: "origin: UNAVAILABLE", Prefetch: true, AtUnixMs: time.Now().UnixMilli()})
			n.mu.Unlock()
			return
		}
		if n.find(id) != nil {
			n.doubles = append(n.doubles, id)
			return
		}
		st := &pb.StoredTitle{TitleId: id, SizeBytes: n.sizes[id], Filling: true, Prefetch: true, Preemptible: n.preemptible}
		if n.autoComplete {
			st = &pb.StoredTitle{TitleId: id, SizeBytes: n.sizes[id], StoredBytes: n.sizes[id], Prefetch: true}
		}
		n.set(id, st)
	case c.GetDrain() != nil:
		n.log = append(n.log, fmt.Sprint("drain ", c.GetDrain().GetDrain()))
	case c.GetProtect() != nil:
		n.protects = append(n.protects, len(n.log))
	case c.GetEvict() != nil:
		id := c.GetEvict().GetTitleId()
		n.log = append(n.log, "evict "+id)
		cancel := n.preemptible && c.GetEvict().GetReason() == evictOperator
		if st := n.find(id); st != nil && (!st.GetFilling() || cancel && st.GetPreemptible()) && st.GetSessions() == 0 {
			n.set(id, nil)
		}
	}
}

// find returns title id on the disk, or nil (smu held).
func (n *simNode) find(id string) *pb.StoredTitle {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, t := range n.titles {
		if t.GetTitleId() == id {
			return t
		}
	}
	return nil
}

// set replaces (st nil: removes) title id and recomputes the free disk.
func (n *simNode) set(id string, st *pb.StoredTitle) {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]*pb.StoredTitle, 0, len(n.titles)+1)
	var used int64
	for _, t := range n.titles {
		if t.GetTitleId() != id {
			out = append(out, t)
			used += t.GetSizeBytes()
		}
	}
	if st != nil {
		out = append(out, st)
		used += st.GetSizeBytes()
	}
	n.titles, n.diskFree = out, n.disk-used
}

// progress shows a fill of id at stored bytes.
func (n *simNode) progress(id string, stored int64) {
	n.smu.Lock()
	defer n.smu.Unlock()
	n.set(id, &pb.StoredTitle{TitleId: id, SizeBytes: n.sizes[id], StoredBytes: stored, Filling: true, Prefetch: true, Preemptible: n.preemptible})
}

// complete finishes the fill of id.
func (n *simNode) complete(id string) {
	n.smu.Lock()
	defer n.smu.Unlock()
	n.set(id, &pb.StoredTitle{TitleId: id, SizeBytes: n.sizes[id], StoredBytes: n.sizes[id], Prefetch: true})
}

// drop makes the fill of id vanish (the node gave it up).
func (n *simNode) drop(id string) {
	n.smu.Lock()
	defer n.smu.Unlock()
	n.set(id, nil)
}

// setPlaying marks id as played by k sessions on the node.
func (n *simNode) setPlaying(id string, k int32) {
	n.smu.Lock()
	defer n.smu.Unlock()
	st := n.find(id)
	if st == nil {
		panic(fmt.Sprintf("%s not on %s", id, n.id))
	}
	n.set(id, &pb.StoredTitle{TitleId: id, SizeBytes: st.GetSizeBytes(), StoredBytes: st.GetStoredBytes(), Filling: st.GetFilling(),
		Prefetch: st.GetPrefetch(), Sessions: k, LastAccessUnixMs: time.Now().UnixMilli(), Preemptible: n.preemptible && st.GetFilling() && k == 0})
}

func (n *simNode) setFailing(v bool) {
	n.smu.Lock()
	n.failing = v
	n.smu.Unlock()
}

// commands returns the commands received so far.
func (n *simNode) commands() []string {
	n.smu.Lock()
	defer n.smu.Unlock()
	return slices.Clone(n.log)
}

// count returns how many times cmd was received.
func (n *simNode) count(cmd string) int {
	k := 0
	for _, c := range n.commands() {
		if c == cmd {
			k++
		}
	}
	return k
}

// has reports whether title id is on the disk (stored or filling).
func (n *simNode) has(id string) bool {
	n.smu.Lock()
	defer n.smu.Unlock()
	return n.find(id) != nil
}

// waitCommand waits until cmd was received at least k times, at most
// waitForMin.
func (n *simNode) waitCommand(t testing.TB, cmd string, k int) {
	t.Helper()
	deadline := time.Now().Add(waitForMin)
	for n.count(cmd) < k {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d× %q on %s; got %v", k, cmd, n.id, n.commands())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// expected returns the ExpectCommands the node received, in order.
func (n *fakeNode) expected() []*pb.ExpectCommand {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.expects)
}
