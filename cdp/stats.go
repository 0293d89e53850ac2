package cdp

import (
	"maps"
	"sync"
)

// Stats is a snapshot of an origin's transfer counters since Start.
type Stats struct {
	// Transfers counts transfers started: Fetch calls that got a channel
	// (and then paid the setup delay), whatever their outcome.
	Transfers int64
	// TitleTransfers counts Transfers per title id.
	TitleTransfers map[string]int64
	// BytesSent counts title bytes handed to gRPC, bytes.
	BytesSent int64
	// Active is the number of transfers holding a channel now.
	Active int
	// PeakActive is the highest Active seen.
	PeakActive int
	// Waiting is the number of Fetch calls queued for a channel now.
	Waiting int
	// Abandoned is the number of transfers whose caller has left (its
	// channel given back) while the transfer has not returned yet, and of
	// the stats of a title's file (a fetch's before it queued, GetTitle's)
	// whose call no longer waits for them (its caller left, or it answered
	// UNAVAILABLE after StatTimeout) while they have not returned: stuck in a file
	// operation no context interrupts (a stat, an open or a read hung on a
	// failing disk or a network file system) when it stays above 0.
	Abandoned int
	// Refused counts no_wait Fetch calls refused with RESOURCE_EXHAUSTED.
	Refused int64
	// Preempted counts preemptible transfers ended (ABORTED) to give their
	// channel to a Fetch that queued for one.
	Preempted int64
	// Yielded counts prefetches ended (ABORTED) to give their channel to
	// a viewer's fill or read.
	Yielded int64
	// CatalogReloads counts catalogs loaded again after Start (Reload).
	CatalogReloads int64
	// CatalogRefused counts reloads refused (the catalog before kept).
	CatalogRefused int64
	// CatalogStale is true while the last reload was refused: the catalog
	// served is not what the title directory holds.
	CatalogStale bool
	// CatalogRefusal is, while CatalogStale, the error of the refused
	// reload (naming the file and the line), as logged; "" otherwise.
	CatalogRefusal string
}

// counters is the live form of Stats.
type counters struct {
	mu sync.Mutex
	s  Stats
}

func (c *counters) snapshot() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.s
	s.TitleTransfers = maps.Clone(c.s.TitleTransfers)
	if s.TitleTransfers == nil {
		s.TitleTransfers = map[string]int64{}
	}
	return s
}

func (c *counters) waiting(delta int) {
	c.mu.Lock()
	c.s.Waiting += delta
	c.mu.Unlock()
}

func (c *counters) abandoned(delta int) {
	c.mu.Lock()
	c.s.Abandoned += delta
	c.mu.Unlock()
}

func (c *counters) refused() {
	c.mu.Lock()
	c.s.Refused++
	c.mu.Unlock()
}

func (c *counters) preempted() {
	c.mu.Lock()
	c.s.Preempted++
	c.mu.Unlock()
}

func (c *counters) yielded() {
	c.mu.Lock()
	c.s.Yielded++
	c.mu.Unlock()
}

// begin records a transfer of title that got a channel.
func (c *counters) begin(title string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.s.Transfers++
	if c.s.TitleTransfers == nil {
		c.s.TitleTransfers = make(map[string]int64)
	}
	c.s.TitleTransfers[title]++
	c.s.Active++
	c.s.PeakActive = max(c.s.PeakActive, c.s.Active)
}

// end records that a transfer gave its channel back.
func (c *counters) end() {
	c.mu.Lock()
	c.s.Active--
	c.mu.Unlock()
}

func (c *counters) sent(n int) {
	c.mu.Lock()
	c.s.BytesSent += int64(n)
	c.mu.Unlock()
}

// catalogLoad records a reload of the catalog, loaded (refusal nil) or
// refused with refusal, and returns whether the reload before it was
// refused.
func (c *counters) catalogLoad(refusal error) (wasStale bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	loaded := refusal == nil
	if loaded {
		c.s.CatalogReloads++
		c.s.CatalogRefusal = ""
	} else {
		c.s.CatalogRefused++
		c.s.CatalogRefusal = refusal.Error()
	}
	wasStale = c.s.CatalogStale
	c.s.CatalogStale = !loaded
	return wasStale
}

// catalogRefusal returns Stats.CatalogRefusal.
func (c *counters) catalogRefusal() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s.CatalogRefusal
}
