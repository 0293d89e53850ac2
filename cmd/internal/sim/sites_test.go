package sim

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// smallSites is the small scenario at 3 sites (2 nodes each), lall only.
func smallSites() Config {
	c := small()
	c.Policies = []string{"lall"}
	c.Sites.Count = 3
	return c
}

// TestSitesWhatSiteAwarenessBuys runs one multi-site demand three ways:
// nothing site-aware (a viewer's node is at its site by chance, about 2 in
// 3 sessions cross sites), the scheduler only (a viewer's own site first:
// few cross, but every site fills its own copies from the origin), and
// the scheduler and the planner (the planner's replicas and copy counts
// per site: fewer origin bytes than with the scheduler alone).
func TestSitesWhatSiteAwarenessBuys(t *testing.T) {
	c := smallSites()
	c.Sites.Aware = []string{SiteAwareAll, SiteAwareScheduler, SiteAwareNone}
	rs, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 {
		t.Fatalf("%d results", len(rs))
	}
	by := map[string]Result{}
	for i, r := range rs {
		checkStorage(t, r)
		f := r.SiteFigures
		if f == nil || f.Sites != 3 || f.SiteAware != c.Sites.Aware[i] || f.SiteLocal != c.Sites.Local {
			t.Fatalf("run %d: site figures %+v", i, f)
		}
		if f.SessionsAcrossSites > r.Admitted || f.BytesAcrossSites > f.StreamedBytes || f.StreamedBytes <= 0 {
			t.Fatalf("%s: %+v, admitted %d", f.SiteAware, f, r.Admitted)
		}
		// Each playback streams at most its title's bytes.
		var most int64
		for _, tr := range r.Trace {
			if tr.Node >= 0 {
				most += tr.Bytes
			}
		}
		if f.StreamedBytes > most {
			t.Fatalf("%s: streamed %d bytes, the titles played have %d", f.SiteAware, f.StreamedBytes, most)
		}
		t.Logf("%-9s admitted %d, across sites %d (%.4f), bytes across %.4f, origin %.2f TB", f.SiteAware, r.Admitted,
			f.SessionsAcrossSites, f.AcrossSitesRatio, f.BytesAcrossSitesRatio, float64(r.OriginBytes)/1e12)
		by[f.SiteAware] = r
	}
	all, sched, none := by[SiteAwareAll], by[SiteAwareScheduler], by[SiteAwareNone]
	if r := none.AcrossSitesRatio; r < 0.55 || r > 0.8 {
		t.Fatalf("site-blind cluster: %.4f of sessions across sites, want about 2/3", r)
	}
	for _, r := range []Result{all, sched} {
		if r.AcrossSitesRatio > none.AcrossSitesRatio/4 || r.BytesAcrossSitesRatio > none.BytesAcrossSitesRatio/4 {
			t.Fatalf("%s: %.4f of sessions (%.4f of bytes) across sites, site-blind %.4f (%.4f)", r.SiteAware,
				r.AcrossSitesRatio, r.BytesAcrossSitesRatio, none.AcrossSitesRatio, none.BytesAcrossSitesRatio)
		}
	}
	// Serving at home costs origin bytes: each site fills its own copy.
	if sched.OriginBytes <= none.OriginBytes {
		t.Fatalf("origin bytes: site-aware scheduler %d, site-blind %d", sched.OriginBytes, none.OriginBytes)
	}
	// The site-aware planner saves some of them.
	if all.OriginBytes >= sched.OriginBytes {
		t.Fatalf("origin bytes: site-aware planner %d, site-blind planner %d", all.OriginBytes, sched.OriginBytes)
	}
}

// TestSitesOnlyNeverCrosses: with --site-only a viewer is refused rather
// than served across sites.
func TestSitesOnlyNeverCrosses(t *testing.T) {
	c := smallSites()
	c.Sites.Only = true
	rs, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	checkStorage(t, r)
	if r.SessionsAcrossSites != 0 || r.BytesAcrossSites != 0 || r.StreamedBytes == 0 || !r.SiteOnly {
		t.Fatalf("site only: %+v", r.SiteFigures)
	}
}

// TestSitesWithoutTasteOrAwarenessAreTheRunWithout: sites with no local
// taste and nothing told of them draw the same demand and make the same
// run as no sites; only the site figures are added.
func TestSitesWithoutTasteOrAwarenessAreTheRunWithout(t *testing.T) {
	c := smallSites()
	c.Sites.Local = 0
	c.Sites.Aware = []string{SiteAwareNone}
	rs, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	c.Sites.Count = 0
	plain, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	got, want := rs[0], plain[0]
	if got.SiteFigures == nil || want.SiteFigures != nil {
		t.Fatalf("site figures %v / %v", got.SiteFigures, want.SiteFigures)
	}
	got.SiteFigures = nil
	for _, r := range []*Result{&got, &want} {
		r.DecisionP50Ns, r.DecisionP99Ns, r.WallSeconds, r.Loads, r.Trace = 0, 0, 0, nil, nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("with sites %+v\nwithout %+v", got, want)
	}
	// The local taste changes titles only: same arrivals and viewers.
	c.Sites.Count, c.Sites.Local = 3, 0.5
	d := generate(&c, 6)
	c.Sites.Count = 0
	d0 := generate(&c, 6)
	if len(d.reqs) != len(d0.reqs) {
		t.Fatalf("%d requests with sites, %d without", len(d.reqs), len(d0.reqs))
	}
	moved := 0
	for i := range d.reqs {
		a, b := d.reqs[i], d0.reqs[i]
		if a.t != b.t || a.sub != b.sub {
			t.Fatalf("request %d: %+v with sites, %+v without", i, a, b)
		}
		if d.titles[a.title].avail > a.t {
			t.Fatalf("request %d for title %d before it is in the catalog", i, a.title)
		}
		if a.title != b.title {
			moved++
		}
	}
	if share := float64(moved) / float64(len(d.reqs)); share < 0.4 || share > 0.5 {
		t.Fatalf("%.3f of the requests follow their site's ranking, want a little under 0.5", share)
	}
}

// TestSitesJSONAndTable: the site fields are in the JSON and the table
// only with sites.
func TestSitesJSONAndTable(t *testing.T) {
	c := smallSites()
	c.Days, c.Demand.Subscribers = 1, 2000
	rs, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	var js, tab bytes.Buffer
	if err := WriteJSON(&js, rs); err != nil {
		t.Fatal(err)
	}
	var objs []map[string]any
	if err := json.Unmarshal(js.Bytes(), &objs); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"sites", "site_aware", "sessions_across_sites", "across_sites_ratio", "streamed_bytes", "bytes_across_sites"} {
		if _, ok := objs[0][k]; !ok {
			t.Fatalf("no %q in %s", k, js.String())
		}
	}
	if err := WriteTable(&tab, rs); err != nil || !strings.Contains(tab.String(), "3 sites, 30% of each site's requests") {
		t.Fatalf("table %v:\n%s", err, tab.String())
	}
	c.Sites.Count = 0
	rs, _ = Run(c)
	js.Reset()
	tab.Reset()
	WriteJSON(&js, rs)
	WriteTable(&tab, rs)
	if strings.Contains(js.String(), "site") || strings.Contains(tab.String(), "sites") {
		t.Fatalf("site fields without sites:\n%s\n%s", js.String(), tab.String())
	}
}

// TestSitesBadSettings: each bad site setting is a clear error.
func TestSitesBadSettings(t *testing.T) {
	for name, set := range map[string]func(*Config){
		"more sites than nodes":    func(c *Config) { c.Sites.Count = 7 },
		"negative sites":           func(c *Config) { c.Sites.Count = -1 },
		"local above 1":            func(c *Config) { c.Sites.Local = 1.5 },
		"unknown awareness":        func(c *Config) { c.Sites.Aware = []string{"planner"} },
		"awareness twice":          func(c *Config) { c.Sites.Aware = []string{"all", "all"} },
		"site only, nothing aware": func(c *Config) { c.Sites.Only, c.Sites.Aware = true, []string{"none"} },
	} {
		c := smallSites()
		set(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "site") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
