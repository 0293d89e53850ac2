package smm

import (
	"errors"
	"testing"
)

// ChooseNode never picks a node reporting a disk fault
// (NodeView.DiskFault), however empty: the manager refuses a prefetch
// there (it cannot write its title cache), so the operator's prefetch
// naming no node was refused while another node could take it.
func TestChooseNodeSkipsADiskFault(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(3, 6)
	faulty := c.node("n0")
	faulty.DiskFault, faulty.DiskBytes, faulty.Items = true, 1<<40, nil // the emptiest disk by far
	id, err := r.ChooseNode("t01", &c.view, offPeak)
	if err != nil || id == "" || id == "n0" {
		t.Fatalf("ChooseNode = %q, %v; want a node without a disk fault", id, err)
	}
	for i := range c.view.Nodes {
		c.view.Nodes[i].Alive = c.view.Nodes[i].ID == "n0"
	}
	if id, err := r.ChooseNode("t01", &c.view, offPeak); !errors.Is(err, ErrNoRoom) {
		t.Errorf("ChooseNode with only the node with a disk fault alive: %q %v, want ErrNoRoom", id, err)
	}
}
