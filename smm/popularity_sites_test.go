package smm

import (
	"testing"
	"time"
)

// TestSiteSharesOfAPopularTitleSurviveASnapshot: a title asked for
// many times from several sites keeps its shares in float32, whose
// rounding lets their sum drift a little above 1; the snapshot must still
// restore (it failed with "site shares sum to 1.000001 > 1", and a
// manager taking over then dropped the whole demand history), with the
// shares it had.
func TestSiteSharesOfAPopularTitleSurviveASnapshot(t *testing.T) {
	p := NewPopularity(time.Hour)
	t0 := time.Unix(1_700_000_000, 0)
	sites := []string{"a", "b", "c", "d", "e"}
	for i := range 60_000 {
		now := t0.Add(time.Duration(i) * 5 * time.Millisecond)
		p.ObserveSite("film", sites[i%len(sites)], now)
		if i%1000 != 999 {
			continue
		}
		snap := p.Snapshot(now)
		var sum float64
		for _, s := range snap[0].Sites {
			sum += s.Share
		}
		if sum > 1+1e-9 {
			t.Fatalf("after %d requests the snapshot's shares sum to %v > 1", i+1, sum)
		}
		q := NewPopularity(time.Hour)
		if err := q.Restore(snap, now); err != nil {
			t.Fatalf("after %d requests: %v", i+1, err)
		}
		for _, s := range sites {
			if got, want := q.SiteShare("film", s), p.SiteShare("film", s); got < want-1e-3 || got > want+1e-3 {
				t.Fatalf("after %d requests: restored share of %s %v, was %v", i+1, s, got, want)
			}
		}
	}
	// A snapshot whose shares drifted above 1 by rounding (written before
	// Snapshot kept them to 1) restores too, scaled to 1.
	q := NewPopularity(time.Hour)
	drift := []SiteShare{{Site: "a", Share: 0.5}, {Site: "b", Share: 0.5001}}
	if err := q.Restore([]PopularityEntry{{Title: "film", Weight: 10, Sites: drift}}, t0); err != nil {
		t.Fatal(err)
	}
	if sum := q.SiteShare("film", "a") + q.SiteShare("film", "b"); sum > 1+1e-6 {
		t.Fatalf("restored shares sum to %v", sum)
	}
}
