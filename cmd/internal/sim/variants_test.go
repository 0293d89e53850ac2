package sim

import (
	"os"
	"testing"
	"time"

	"vodcluster/smm"
)

// variantEvictor is the default storage policy's node evictor (gdsf on
// the Replicator's long-memory rates, titles not planned on the node
// first) with two of its choices that can be switched off, for the
// variants of docs/storage.md.
type variantEvictor struct {
	g         *smm.GDSF
	rep       *smm.Replicator
	node      string
	copies    bool // lower the cost of evicting a title with copies elsewhere
	protected bool // a first pass that spares the titles planned on the node
}

func (v *variantEvictor) Name() string { return "gdsf" }

func (v *variantEvictor) Victims(items []smm.Item, need int64, now time.Time) ([]string, bool) {
	xs := append([]smm.Item(nil), items...)
	for i := range xs {
		if v.copies {
			xs[i].Copies = v.rep.Copies(v.node, xs[i].Title)
		}
	}
	if !v.protected {
		return v.g.Victims(xs, need, now)
	}
	first := append([]smm.Item(nil), xs...)
	for i := range first {
		first[i].Pinned = v.rep.Planned(v.node, first[i].Title)
	}
	out, ok := v.g.Victims(first, need, now)
	if ok {
		return out, true
	}
	gone := map[string]bool{}
	var freed int64
	for _, t := range out {
		gone[t] = true
	}
	rest := xs[:0]
	for _, it := range xs {
		if gone[it.Title] {
			freed += it.Bytes
		} else {
			rest = append(rest, it)
		}
	}
	more, ok := v.g.Victims(rest, need-freed, now)
	return append(out, more...), ok
}

// TestStorageVariants runs the variants of the default storage policy that
// docs/storage.md reports (day 1 from empty disks; day 3 after two
// warm-up days), with the default scheduler. It takes minutes: set
// SIM_VARIANTS=1 to run it.
func TestStorageVariants(t *testing.T) {
	if os.Getenv("SIM_VARIANTS") == "" {
		t.Skip("SIM_VARIANTS not set")
	}
	type variant struct {
		name    string
		storage string
		mutate  func(*smm.ReplicatorConfig)
		planner string
		evictor func(node string, rep *smm.Replicator) smm.Evictor // nil: the policy's own
	}
	own := func(copies, protected bool) func(string, *smm.Replicator) smm.Evictor {
		return func(node string, rep *smm.Replicator) smm.Evictor {
			g := smm.NewGDSF(rep.Config().SetupBytes)
			g.Frequency = rep.Value
			return &variantEvictor{g: g, rep: rep, node: node, copies: copies, protected: protected}
		}
	}
	vs := []variant{
		{name: "default: gdsf, Replicator, ranking half-life 24 h", storage: "gdsf"},
		{name: "the same through the variant evictor (check)", storage: "gdsf", evictor: own(true, true)},
		{name: "ranking half-life 48 h", storage: "gdsf", mutate: func(c *smm.ReplicatorConfig) { c.RankHalfLife = 48 * time.Hour }},
		{name: "ranking half-life 96 h", storage: "gdsf", mutate: func(c *smm.ReplicatorConfig) { c.RankHalfLife = 96 * time.Hour }},
		{name: "keep bonus 1 (no stickiness of the plan)", storage: "gdsf", mutate: func(c *smm.ReplicatorConfig) { c.KeepBonus = 1 }},
		{name: "no cost discount for copies on other nodes", storage: "gdsf", evictor: own(false, true)},
		{name: "planned titles not protected by the node's evictor", storage: "gdsf", evictor: own(true, false)},
		{name: "disk fill 100% of the disks planned", storage: "gdsf", mutate: func(c *smm.ReplicatorConfig) { c.DiskFill = 1 }},
		{name: "disk fill 50% of the disks planned", storage: "gdsf", mutate: func(c *smm.ReplicatorConfig) { c.DiskFill = 0.5 }},
		{name: "prefetch an absent title at 1 expected request", storage: "gdsf", mutate: func(c *smm.ReplicatorConfig) { c.MinExpected = 1 }},
		{name: "gdsf without the planner", storage: "gdsf", planner: smm.PlannerNone},
		{name: "gdsf-classic", storage: "gdsf-classic"},
	}
	for _, v := range vs {
		var got [2]Result
		for k, days := range []int{1, 3} {
			c := Default()
			c.Policies = []string{"lall"}
			c.StoragePolicy = v.storage
			c.Days, c.WarmupDays = days, days-1
			c.Storage.Replicator = smm.DefaultReplicatorConfig()
			if v.mutate != nil {
				v.mutate(&c.Storage.Replicator)
			}
			c.Storage.Planner = v.planner
			d := generate(&c, 20)
			e, err := newEngine(&c, d, "lall")
			if err != nil {
				t.Fatal(err)
			}
			if v.evictor != nil {
				for _, n := range e.nodes {
					n.evictor = v.evictor(n.spec.ID, e.rep)
				}
			}
			r, err := e.run()
			if err != nil {
				t.Fatal(err)
			}
			checkStorage(t, r)
			got[k] = r
		}
		t.Logf("| %s | %.2f (%.3f) | %.2f (%.3f) |", v.name, float64(got[0].OriginBytes)/1e12, got[0].OriginBytesRatioToBound,
			float64(got[1].OriginBytes)/1e12, got[1].OriginBytesRatioToBound)
	}
}
