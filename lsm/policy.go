package lsm

import (
	"fmt"
	"sort"
	"sync"
)

// Policy chooses a node for a request. Implementations are small, named
// and registered with Register; they must only return eligible nodes
// (Scheduler.Eligible), or -1 when none fits.
type Policy interface {
	// Name is the policy's name as operators write it in the config
	// (Linux IPVS names where they exist: rr, wrr, lc, wlc, ...).
	Name() string
	// Pick returns the index in s.Nodes of the node that should serve r,
	// or -1 when no eligible node is acceptable. It may update the
	// policy's own state (a round-robin cursor, a title->node table).
	Pick(s *Scheduler, r *Request) int
}

// Factory builds a fresh policy from the scheduler's configuration.
type Factory func(cfg Config) Policy

var (
	registryMu sync.RWMutex
	registry   = map[string]Factory{}
)

// Register makes a policy available by name. It panics when name is taken,
// as it is called from init functions.
func Register(name string, f Factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("lsm: policy registered twice: " + name)
	}
	registry[name] = f
}

// Policies returns the names of all registered policies, sorted.
func Policies() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// NewPolicy builds the policy called name. The error lists the known names.
func NewPolicy(name string, cfg Config) (Policy, error) {
	registryMu.RLock()
	f, ok := registry[name]
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("lsm: unknown policy %q (known: %v)", name, Policies())
	}
	return f(cfg), nil
}
