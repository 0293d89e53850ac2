package vodnode

import (
	"context"
	"strings"
	"testing"

	pb "vodcluster/proto/vodcluster/v1"
)

// A fill the origin keeps failing is reported retried, with the node's
// failed transfers since the origin last answered and the last cause, so
// that vodctl fills says "origin retry" rather than a fill at 0% that
// nothing tells apart from a slow one.
func TestFillRetriesReported(t *testing.T) {
	o := newFakeOrigin(t)
	o.failAt.Store(188 * 10) // every transfer fails there, from the second on at once
	m, maddr := startFastManager(t)
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.ManagerAddr = maddr })
	tt, err := n.store.Acquire(context.Background(), "sample-004")
	if err != nil {
		t.Fatal(err)
	}
	defer n.store.Release(tt)
	m.reportAfter(t, "a report of the fill retried twice", func(r *pb.LoadReport) bool {
		for _, st := range r.GetTitles() {
			if st.GetTitleId() == "sample-004" && st.GetFilling() && st.GetOriginRetries() >= 2 &&
				strings.Contains(st.GetOriginError(), "origin failure at a set offset (test)") {
				return true
			}
		}
		return false
	})
}
