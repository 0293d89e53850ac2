package smm

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// MaxSites is how many viewers' sites one Popularity tells apart: a
// request from a site beyond the first MaxSites it met counts as from no
// site.
const MaxSites = 64

// SiteShare is one site's share of a title's decayed request count.
type SiteShare struct {
	Site  string  `json:"site"`
	Share float64 `json:"share"` // in [0, 1]
}

// zeroShares is a row of shares for a new record.
var zeroShares [MaxSites]float32

// ObserveSite counts one request for title at now by a viewer of site
// ("" = no site, or not known): as Observe, and it keeps the site's
// share of the title's decayed request count. The shares of a title
// decay with it (a share is a ratio of two counts decayed alike), so
// SiteShare says where the title's current demand comes from; the
// requests of no site, and those seeded (Seed), are the rest. The cost:
// nothing until a request names a site, then 4 bytes per title and site
// met.
func (p *Popularity) ObserveSite(title, site string, now time.Time) {
	i, x := p.getAt(title, now)
	if site != "" || p.shares != nil {
		p.observeShares(i, site, x.rate)
	}
	x.rate++
	x.count++
}

// observeShares updates the shares of record i, whose decayed count is
// before, for one more request of site ("" = none): every share is
// scaled by before/(before+1) and site's gains 1/(before+1).
func (p *Popularity) observeShares(i int32, site string, before float64) {
	s := p.siteIndex(site, true)
	row := p.row(i)
	if row == nil {
		return
	}
	after := before + 1
	f := float32(before / after)
	for j := range row {
		row[j] *= f
	}
	if s >= 0 {
		row[s] += float32(1 / after)
	}
}

// siteIndex returns site's index in p.sites, -1 for "" or a site beyond
// MaxSites; with create, a site not met yet is added (every record gets a
// zero share of it).
func (p *Popularity) siteIndex(site string, create bool) int {
	if site == "" {
		return -1
	}
	for j, s := range p.sites {
		if s == site {
			return j
		}
	}
	old := len(p.sites)
	if !create || old >= MaxSites {
		return -1
	}
	// A new slice: a copy of the tracker (copyInto) may share the old one.
	p.sites = append(p.sites[:old:old], site)
	n := old + 1
	shares := make([]float32, len(p.entries)*n)
	if old > 0 {
		for e := range p.entries {
			copy(shares[e*n:e*n+old], p.shares[e*old:(e+1)*old])
		}
	}
	p.shares = shares
	return old
}

// row returns record i's shares, one per site of p.sites; nil when no
// site was met or i < 0.
func (p *Popularity) row(i int32) []float32 {
	n := len(p.sites)
	if n == 0 || i < 0 {
		return nil
	}
	a := int(i) * n
	return p.shares[a : a+n : a+n]
}

// growShares gives the record just appended to entries its zero shares.
func (p *Popularity) growShares() {
	if n := len(p.sites); n > 0 {
		p.shares = append(p.shares, zeroShares[:n]...)
	}
}

// moveShares moves the shares of record from to record to (Prune's
// swap-remove) and drops those past the last record.
func (p *Popularity) moveShares(from, to int) {
	n := len(p.sites)
	if n == 0 {
		return
	}
	if from != to {
		copy(p.shares[to*n:(to+1)*n], p.shares[from*n:(from+1)*n])
	}
	p.shares = p.shares[:len(p.entries)*n]
}

// scaleShares multiplies record i's shares by f (a request rate that
// rose without a site: Seed).
func (p *Popularity) scaleShares(i int32, f float64) {
	for j, row := 0, p.row(i); j < len(row); j++ {
		row[j] *= float32(f)
	}
}

// shareAt returns share j of row, clamped to [0, 1]; 0 for j < 0.
func shareAt(row []float32, j int) float64 {
	if j < 0 || j >= len(row) {
		return 0
	}
	return min(max(float64(row[j]), 0), 1)
}

// SiteShare returns site's share of title's decayed request count, in
// [0, 1] (0 for an unknown title or site, or site "").
func (p *Popularity) SiteShare(title, site string) float64 {
	i, ok := p.index[title]
	if !ok {
		return 0
	}
	return shareAt(p.row(i), p.siteIndex(site, false))
}

// SiteShares returns title's sites with a share above 0, by site name.
func (p *Popularity) SiteShares(title string) []SiteShare {
	i, ok := p.index[title]
	if !ok {
		return nil
	}
	return p.sharesOf(i)
}

// sharesOf returns record i's shares above 0, by site name, summing to at
// most 1: the float32 shares' rounding lets their sum drift above 1 (by
// up to about 1e-3 for a title asked for many times), and such a sum is
// scaled back to 1.
func (p *Popularity) sharesOf(i int32) []SiteShare {
	var out []SiteShare
	var sum float64
	for j, row := 0, p.row(i); j < len(row); j++ {
		if s := shareAt(row, j); s > 0 {
			out = append(out, SiteShare{Site: p.sites[j], Share: s})
			sum += s
		}
	}
	scaleTo1(out, sum)
	slices.SortFunc(out, func(a, b SiteShare) int { return strings.Compare(a.Site, b.Site) })
	return out
}

// scaleTo1 scales shares, of sum sum, down to a sum of 1 (up to float64
// rounding) when sum is above 1.
func scaleTo1(ss []SiteShare, sum float64) {
	if sum <= 1 {
		return
	}
	for k := range ss {
		ss[k].Share = min(ss[k].Share/sum, 1)
	}
}

// shareSumSlack is how far above 1 a snapshot's shares may sum: the drift
// of float32 shares' rounding (snapshots taken before sharesOf scaled
// them); Restore scales such shares to 1.
const shareSumSlack = 1e-2

// Sites returns the viewers' sites met so far, in the order met. The
// slice is shared: do not modify it.
func (p *Popularity) Sites() []string { return p.sites }

// checkShares checks a snapshot entry's site shares: named sites, once
// each, shares in [0, 1] summing to at most 1 (with the rounding of
// shareSumSlack).
func checkShares(ss []SiteShare) error {
	var sum float64
	for i, s := range ss {
		if s.Site == "" || !(s.Share >= 0 && s.Share <= 1) {
			return fmt.Errorf("smm: bad site share %+v", s)
		}
		if slices.ContainsFunc(ss[:i], func(o SiteShare) bool { return o.Site == s.Site }) {
			return fmt.Errorf("smm: site %q given twice", s.Site)
		}
		sum += s.Share
	}
	if sum > 1+shareSumSlack || math.IsNaN(sum) {
		return fmt.Errorf("smm: site shares sum to %v > 1", sum)
	}
	return nil
}

// setShares replaces record i's shares with ss (checked by checkShares;
// a sum above 1 is scaled to 1); a site beyond MaxSites is dropped.
func (p *Popularity) setShares(i int32, ss []SiteShare) {
	var sum float64
	for _, s := range ss {
		p.siteIndex(s.Site, true)
		sum += s.Share
	}
	f := 1.0
	if sum > 1 {
		f = 1 / sum
	}
	row := p.row(i)
	clear(row)
	for _, s := range ss {
		if j := p.siteIndex(s.Site, false); j >= 0 {
			row[j] = float32(s.Share * f)
		}
	}
}
