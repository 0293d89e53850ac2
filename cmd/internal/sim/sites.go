package sim

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"vodcluster/smm"
)

// Sites splits the cluster and its viewers into sites (points of
// presence), to measure what site-aware scheduling and storage planning
// save in traffic between sites. With Count 0 or 1 there are no sites and
// the run is exactly the run without them.
//
// With Count = N > 1: node i (in the order the node classes build them)
// stands at site-(i mod N + 1), so each site has a share of every class;
// subscriber s is a viewer of site-(s mod N + 1), so the sites have equal
// shares of the viewers and of the requests. Each site has its own taste:
// a request is, with probability Local, for the title its site ranks
// where the common ranking has the title drawn (a per-site permutation of
// the catalog, within the initial catalog and within each day's new
// titles), else for the title drawn. So every site's requests follow the
// same Zipf law, a share 1 - Local of them over the common ranking and a
// share Local over the site's own: titles popular at one site only. The
// sites' draws come from a generator of their own (seeded by Seed), so
// the arrivals, watch times, subscribers and failures are those of the
// run without sites.
type Sites struct {
	Count int     `yaml:"count"` // sites, 0 or 1: none; at most the nodes and smm.MaxSites (what the planner tells apart)
	Local float64 `yaml:"local"` // share of each site's requests that follow its own ranking, in [0, 1]
	// Only keeps a viewer to the nodes of its site (lsm Request.SiteOnly):
	// refused rather than served across sites. It needs a site-aware
	// scheduler (Aware all or scheduler).
	Only bool `yaml:"only"`
	// Aware are what knows the sites, one run each (with every storage
	// and scheduling policy): SiteAwareAll (the scheduler, NodeSpec.Site
	// and Request.Site, and the planner, NodeView.Site and
	// smm.Observe with the viewer's site), SiteAwareScheduler (the
	// scheduler only: the planner plans for the cluster as a whole), and
	// SiteAwareNone (neither: the baseline of a cluster run as one site).
	// Empty: SiteAwareAll.
	Aware []string `yaml:"aware"`
}

// The values of Sites.Aware.
const (
	SiteAwareAll       = "all"
	SiteAwareScheduler = "scheduler"
	SiteAwareNone      = "none"
)

// on reports whether the run has sites.
func (s *Sites) on() bool { return s.Count > 1 }

// aware returns the awareness modes to run: one, "", without sites.
func (s *Sites) aware() []string {
	switch {
	case !s.on():
		return []string{""}
	case len(s.Aware) == 0:
		return []string{SiteAwareAll}
	}
	return s.Aware
}

// validate checks s for a cluster of nodes nodes; show names a value by
// its path (Config.validate).
func (s *Sites) validate(nodes int, show showFunc) error {
	switch {
	case s.Count < 0 || s.Count > smm.MaxSites:
		return fmt.Errorf("sim: %s: out of 0..%d", show("sites.count", s.Count), smm.MaxSites)
	case s.Count > nodes:
		return fmt.Errorf("sim: %s for %d nodes: a site needs a node", show("sites.count", s.Count), nodes)
	case !(s.Local >= 0 && s.Local <= 1):
		return fmt.Errorf("sim: %s: out of [0, 1]", show("sites.local", s.Local))
	}
	for i, a := range s.Aware {
		if a != SiteAwareAll && a != SiteAwareScheduler && a != SiteAwareNone {
			return fmt.Errorf("sim: %s: unknown site awareness (known: all, scheduler, none)", show(fmt.Sprintf("sites.aware[%d]", i), a))
		}
		for _, b := range s.Aware[:i] {
			if a == b {
				return fmt.Errorf("sim: %s: site awareness given twice", show(fmt.Sprintf("sites.aware[%d]", i), a))
			}
		}
		if s.Only && a == SiteAwareNone {
			return fmt.Errorf("sim: %s: sites.only needs a site-aware scheduler", show(fmt.Sprintf("sites.aware[%d]", i), a))
		}
	}
	return nil
}

// siteName returns the name of site k (0-based).
func siteName(k int) string { return "site-" + strconv.Itoa(k+1) }

// siteTaste draws the sites' own tastes (Sites): a permutation of the
// catalog per site, extended with each batch of new titles.
type siteTaste struct {
	n     int
	local float64
	rng   *rand.Rand
	perm  [][]int32 // [site][title] the title the site ranks where the common ranking has title
}

func newSiteTaste(s *Sites, seed uint64) *siteTaste {
	if !s.on() {
		return nil
	}
	return &siteTaste{n: s.Count, local: s.Local, rng: rand.New(rand.NewPCG(seed, 0x517e517e)), perm: make([][]int32, s.Count)}
}

// add extends every site's permutation over the titles lo..hi-1 (a batch:
// the initial catalog, or one day's new titles).
func (st *siteTaste) add(lo, hi int) {
	for k := range st.perm {
		for _, j := range st.rng.Perm(hi - lo) {
			st.perm[k] = append(st.perm[k], int32(lo+j))
		}
	}
}

// pick returns the title subscriber sub asks for where the common ranking
// drew ti.
func (st *siteTaste) pick(sub int32, ti int) int {
	if st.rng.Float64() < st.local {
		return int(st.perm[int(sub)%st.n][ti])
	}
	return ti
}

// SiteFigures are a run's figures of traffic between sites, present only
// when the run has sites (Config.Sites.Count > 1). A session is served
// across sites when its viewer's site is not its node's.
type SiteFigures struct {
	Sites int `json:"sites"`
	// SiteAware is what knew the sites in this run (Sites.Aware).
	SiteAware string  `json:"site_aware"`
	SiteLocal float64 `json:"site_local"` // Sites.Local
	SiteOnly  bool    `json:"site_only"`
	// SessionsAcrossSites counts the admitted sessions (Admitted) that
	// played on a node of another site than their viewer's.
	SessionsAcrossSites int64   `json:"sessions_across_sites"`
	AcrossSitesRatio    float64 `json:"across_sites_ratio"` // SessionsAcrossSites / Admitted
	// StreamedBytes are the bytes the nodes streamed to viewers (each
	// measured playback, resumed ones included, from its first byte to its
	// end at the title's bitrate), bytes.
	StreamedBytes int64 `json:"streamed_bytes"`
	// BytesAcrossSites are those streamed across sites: the backbone's
	// share of the delivery, bytes.
	BytesAcrossSites      int64   `json:"bytes_across_sites"`
	BytesAcrossSitesRatio float64 `json:"bytes_across_sites_ratio"` // BytesAcrossSites / StreamedBytes
}

// viewerSite returns subscriber sub's site (0-based), -1 without sites.
func (e *engine) viewerSite(sub int32) int {
	if e.sites == 0 {
		return -1
	}
	return int(sub) % e.sites
}

// streamed counts, when sites are measured, the bytes a playback of
// session s streamed until now, and whether it crossed sites.
func (e *engine) streamed(s *session) {
	if e.res.SiteFigures == nil || s.trace < 0 {
		return
	}
	start := s.endAt - s.watch
	b := int64((e.now - start) * float64(s.res.Bitrate) / 8)
	e.res.StreamedBytes += b
	if e.nodeSite[s.res.Node] != e.viewerSite(s.sub) {
		e.res.BytesAcrossSites += b
	}
}

// siteRatios completes the ratios of the site figures.
func (r *Result) siteRatios() {
	f := r.SiteFigures
	if f == nil {
		return
	}
	if r.Admitted > 0 {
		f.AcrossSitesRatio = float64(f.SessionsAcrossSites) / float64(r.Admitted)
	}
	if f.StreamedBytes > 0 {
		f.BytesAcrossSitesRatio = float64(f.BytesAcrossSites) / float64(f.StreamedBytes)
	}
}
