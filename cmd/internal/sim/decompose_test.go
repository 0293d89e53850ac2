package sim

import (
	"testing"
	"time"

	"vodcluster/smm"
	"vodcluster/smm/bound"
	"vodcluster/smm/replay"
)

// TestStorageOnTheDefaultDemand is issue 4's bar on the default demand (a
// day from empty disks), and the decomposition of the default storage
// policy's distance to the offline bound that docs/storage.md reports:
//
//   - the offline bound (residency rule, the cluster's disk as one cache);
//   - gdsf knowing each title's request count for the day in advance, as
//     one cache: what only knowing when requests come would save;
//   - gdsf learning popularity online, as one cache: the price of
//     learning;
//   - the same oracle in the cluster: the price of 20 disks with titles
//     where the scheduler sends their viewers, replicas included;
//   - the default storage policy in the cluster.
//
// It asserts what holds on this demand: no QoS violation, at most half of
// lru with wlc, the bound below everything, and the order of the steps.
func TestStorageOnTheDefaultDemand(t *testing.T) {
	if testing.Short() {
		t.Skip("simulated days of the default cluster")
	}
	c := Default()
	c.Policies = []string{"lall", "wlc"}
	c.StoragePolicies = []string{"gdsf", "lru"}
	rs, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	def, lruWLC := rs[0], rs[3]
	if def.StoragePolicy != "gdsf" || def.Policy != "lall" || lruWLC.StoragePolicy != "lru" || lruWLC.Policy != "wlc" {
		t.Fatalf("runs %s/%s %s/%s", def.StoragePolicy, def.Policy, lruWLC.StoragePolicy, lruWLC.Policy)
	}
	for _, r := range rs {
		checkStorage(t, r)
	}
	if def.Refused > 10 || 2*def.OriginBytes > lruWLC.OriginBytes {
		t.Errorf("default storage policy: %d refused, %d origin bytes vs lru with wlc %d", def.Refused, def.OriginBytes, lruWLC.OriginBytes)
	}
	tb := func(b int64) float64 { return float64(b) / 1e12 }
	t.Logf("default gdsf/lall %.2f TB (ratio %.3f), lru/wlc %.2f TB (%.3f of it)", tb(def.OriginBytes), def.OriginBytesRatioToBound,
		tb(lruWLC.OriginBytes), float64(def.OriginBytes)/float64(lruWLC.OriginBytes))

	// The same day as one cache, from the default run's trace.
	e, _ := newEngine(&c, generate(&c, 20), "lall")
	reqs := bound.ServedRequests(recordsOf(def.Trace))
	one, err := replay.RunSessions(reqs, def.DiskBytes, smm.NewGDSF(smm.DefaultSetupBytes))
	if err != nil {
		t.Fatal(err)
	}
	oracle, err := replay.RunSessions(reqs, def.DiskBytes, replay.Oracle(reqs))
	if err != nil {
		t.Fatal(err)
	}
	// The oracle in the cluster: gdsf on every disk with the day's counts.
	count := map[string]float64{}
	for _, r := range reqs {
		count[r.Title]++
	}
	e.plan, e.rep = smm.NoPlanner{}, nil
	for _, n := range e.nodes {
		g := smm.NewGDSF(smm.DefaultSetupBytes)
		g.Frequency = func(title string, _ time.Time) float64 { return count[title] }
		n.evictor = g
	}
	cl, err := e.run()
	if err != nil {
		t.Fatal(err)
	}
	checkStorage(t, cl)
	steps := []struct {
		name  string
		bytes int64
	}{
		{"compulsory (first requests)", def.CompulsoryOriginBytes},
		{"instant bound", def.BoundInstantOriginBytes},
		{"offline bound (residency)", def.BoundOriginBytes},
		{"gdsf knowing the day's counts, one cache", oracle.OriginBytes},
		{"gdsf knowing the day's counts, 20 disks", cl.OriginBytes},
		{"default storage policy, 20 disks", def.OriginBytes},
	}
	for i, s := range steps {
		t.Logf("%-45s %7.2f TB  %.3f x bound", s.name, tb(s.bytes), float64(s.bytes)/float64(def.BoundOriginBytes))
		if i > 0 && s.bytes < steps[i-1].bytes {
			t.Errorf("%s below %s", s.name, steps[i-1].name)
		}
	}
	t.Logf("%-45s %7.2f TB  %.3f x bound", "gdsf learning, one cache", tb(one.OriginBytes), float64(one.OriginBytes)/float64(def.BoundOriginBytes))
	t.Logf("replica fills: default %d (%.2f TB), oracle in the cluster %d (%.2f TB)", def.ReplicaFills, tb(def.ReplicaFillBytes), cl.ReplicaFills, tb(cl.ReplicaFillBytes))
	if one.OriginBytes < oracle.OriginBytes || one.OriginBytes > def.OriginBytes {
		t.Errorf("gdsf as one cache %d outside [oracle %d, cluster %d]", one.OriginBytes, oracle.OriginBytes, def.OriginBytes)
	}
}

// recordsOf turns the simulator's trace into CSV records.
func recordsOf(tr []TraceRecord) []bound.Record {
	out := make([]bound.Record, len(tr))
	for i, r := range tr {
		node := "-1"
		if r.Node >= 0 {
			node = "n"
		}
		out[i] = bound.Record{Time: r.T, Title: r.Title, Bytes: r.Bytes, Node: node, Fill: r.Fill, End: r.End}
	}
	return out
}
