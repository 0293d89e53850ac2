package acm

import (
	"fmt"
	"net/netip"
	"slices"
)

// Site is one of the operator's sites (points of presence): its name, as
// its nodes register with it (node config site), and the client address
// prefixes it serves.
type Site struct {
	Name    string
	Clients []netip.Prefix
}

// siteTable maps a client address to its site by the longest prefix.
type siteTable struct {
	prefixes []sitePrefix // by descending length
	names    []string     // the sites, in the operator's order
}

type sitePrefix struct {
	p    netip.Prefix
	site string
}

// newSiteTable checks sites and indexes their prefixes. Errors: a site
// without a name or prefixes, a name given twice, a prefix in two sites
// (or twice in one), an invalid prefix, an IPv4-mapped IPv6 prefix wider
// than ::ffff:0:0/96 (a narrower one counts as its IPv4 prefix).
func newSiteTable(sites []Site) (*siteTable, error) {
	t := &siteTable{}
	names := map[string]bool{}
	seen := map[netip.Prefix]string{}
	for i, s := range sites {
		switch {
		case s.Name == "":
			return nil, fmt.Errorf("site %d has no name", i+1)
		case names[s.Name]:
			return nil, fmt.Errorf("site %q given twice", s.Name)
		case len(s.Clients) == 0:
			return nil, fmt.Errorf("site %q has no client prefixes", s.Name)
		}
		names[s.Name] = true
		t.names = append(t.names, s.Name)
		for _, p := range s.Clients {
			if !p.IsValid() {
				return nil, fmt.Errorf("site %q: an invalid prefix", s.Name)
			}
			if p.Addr().Is4In6() {
				// Client addresses are matched unmapped (siteOf): an
				// IPv4-mapped prefix is the IPv4 one.
				if p.Bits() < 96 {
					return nil, fmt.Errorf("site %q: prefix %s is wider than the IPv4-mapped addresses (::ffff:0:0/96): give IPv4 clients as IPv4 prefixes", s.Name, p)
				}
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			p = p.Masked()
			if other, dup := seen[p]; dup && other == s.Name {
				return nil, fmt.Errorf("site %q: prefix %s given twice", s.Name, p)
			} else if dup {
				return nil, fmt.Errorf("prefix %s is in sites %q and %q", p, other, s.Name)
			}
			seen[p] = s.Name
			t.prefixes = append(t.prefixes, sitePrefix{p, s.Name})
		}
	}
	// Longest first; among equal lengths the order does not matter (no
	// two equal prefixes).
	for i := 1; i < len(t.prefixes); i++ {
		for j := i; j > 0 && t.prefixes[j].p.Bits() > t.prefixes[j-1].p.Bits(); j-- {
			t.prefixes[j], t.prefixes[j-1] = t.prefixes[j-1], t.prefixes[j]
		}
	}
	return t, nil
}

// siteOf returns the site of client address ip (an IPv4-mapped IPv6
// address counts as IPv4), "" when none or ip does not parse.
func (t *siteTable) siteOf(ip string) string {
	if t == nil || len(t.prefixes) == 0 {
		return ""
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ""
	}
	a = a.Unmap().WithZone("") // a link-local client's zone (fe80::1%eth0) is not part of a prefix
	for _, p := range t.prefixes {
		if p.p.Contains(a) {
			return p.site
		}
	}
	return ""
}

// has reports whether name is one of the sites.
func (t *siteTable) has(name string) bool {
	return t != nil && slices.Contains(t.names, name)
}

// namesList returns the sites' names, in the operator's order.
func (t *siteTable) namesList() []string {
	if t == nil {
		return nil
	}
	return t.names
}
