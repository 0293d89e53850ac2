package smm

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// Pin is one operator pin: Title kept on Node, or anywhere in the cluster
// when Node is empty.
type Pin struct {
	Title string `json:"title"`
	Node  string `json:"node,omitempty"` // "" = pinned to the cluster
}

// ErrBadPin is returned for a pin with an empty or malformed title or node
// id.
var ErrBadPin = errors.New("smm: bad pin")

// Pins is the operator's pins. A title pinned to a node is prefetched there
// when missing and never evicted from it. A title pinned to the cluster is
// kept in the plan (prefetched when no node has it) and none of its copies
// is evicted, by the planner or by a node's Evictor.
// The zero value is empty and ready; not safe for concurrent use. It
// marshals to JSON as a sorted list of Pin for the manager to persist.
type Pins struct {
	cluster map[string]struct{}
	node    map[string]map[string]struct{} // node -> titles
}

// NewPins returns a Pins holding pins (see Load).
func NewPins(pins ...Pin) (*Pins, error) {
	p := &Pins{}
	if err := p.Load(pins); err != nil {
		return nil, err
	}
	return p, nil
}

func validID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f || c == '/' {
			return false
		}
	}
	return true
}

func checkPin(node, title string) error {
	if !validID(title) {
		return fmt.Errorf("%w: title %q", ErrBadPin, title)
	}
	if node != "" && !validID(node) {
		return fmt.Errorf("%w: node %q", ErrBadPin, node)
	}
	return nil
}

// Pin pins title to node, or to the cluster when node is "". It reports
// whether the pin is new, and fails with ErrBadPin on a malformed id.
func (p *Pins) Pin(node, title string) (bool, error) {
	if err := checkPin(node, title); err != nil {
		return false, err
	}
	set := p.set(node, true)
	if _, ok := set[title]; ok {
		return false, nil
	}
	set[title] = struct{}{}
	return true, nil
}

// Unpin removes the pin of title to node ("" = the cluster pin) and
// reports whether there was one.
func (p *Pins) Unpin(node, title string) bool {
	set := p.set(node, false)
	if _, ok := set[title]; !ok {
		return false
	}
	delete(set, title)
	if node != "" && len(set) == 0 {
		delete(p.node, node)
	}
	return true
}

func (p *Pins) set(node string, create bool) map[string]struct{} {
	if node == "" {
		if p.cluster == nil && create {
			p.cluster = map[string]struct{}{}
		}
		return p.cluster
	}
	s := p.node[node]
	if s == nil && create {
		if p.node == nil {
			p.node = map[string]map[string]struct{}{}
		}
		s = map[string]struct{}{}
		p.node[node] = s
	}
	return s
}

// Pinned reports whether title has a pin of its own to node ("" = to the
// cluster).
func (p *Pins) Pinned(node, title string) bool {
	if p == nil {
		return false
	}
	_, ok := p.set(node, false)[title]
	return ok
}

// Protects reports whether node's copy of title must not be evicted by an
// Evictor: title is pinned to node or to the cluster. Use it for
// Item.Pinned.
func (p *Pins) Protects(node, title string) bool {
	return p.Pinned(node, title) || p.Pinned("", title)
}

// NodePins returns the titles pinned to node, sorted.
func (p *Pins) NodePins(node string) []string {
	if p == nil || node == "" {
		return nil
	}
	return sortedKeys(p.node[node])
}

// nodesPinning returns the nodes title is pinned to, sorted.
func (p *Pins) nodesPinning(title string) []string {
	if p == nil {
		return nil
	}
	var out []string
	for n, set := range p.node {
		if _, ok := set[title]; ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// ClusterPins returns the titles pinned to the cluster, sorted.
func (p *Pins) ClusterPins() []string {
	if p == nil {
		return nil
	}
	return sortedKeys(p.cluster)
}

// List returns every pin, cluster pins first, then by node and title.
func (p *Pins) List() []Pin {
	if p == nil {
		return nil
	}
	var out []Pin
	for _, t := range sortedKeys(p.cluster) {
		out = append(out, Pin{Title: t})
	}
	nodes := make([]string, 0, len(p.node))
	for n := range p.node {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		for _, t := range sortedKeys(p.node[n]) {
			out = append(out, Pin{Title: t, Node: n})
		}
	}
	return out
}

// Len returns the number of pins.
func (p *Pins) Len() int {
	if p == nil {
		return 0
	}
	n := len(p.cluster)
	for _, s := range p.node {
		n += len(s)
	}
	return n
}

// Load adds pins; it fails with ErrBadPin on a malformed one, and then
// adds none.
func (p *Pins) Load(pins []Pin) error {
	for _, x := range pins {
		if err := checkPin(x.Node, x.Title); err != nil {
			return err
		}
	}
	for _, x := range pins {
		_, _ = p.Pin(x.Node, x.Title)
	}
	return nil
}

// MarshalJSON encodes the pins as List does.
func (p *Pins) MarshalJSON() ([]byte, error) {
	l := p.List()
	if l == nil {
		l = []Pin{}
	}
	return json.Marshal(l)
}

// UnmarshalJSON replaces the pins with a JSON list of Pin; it fails on
// malformed JSON or pins, and then keeps the old ones.
func (p *Pins) UnmarshalJSON(b []byte) error {
	var l []Pin
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("smm: pins: %w", err)
	}
	var q Pins
	if err := q.Load(l); err != nil {
		return err
	}
	*p = q
	return nil
}

func sortedKeys(m map[string]struct{}) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
