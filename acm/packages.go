package acm

import (
	"fmt"
	"slices"
	"strings"

	"vodcluster/acm/boss"
	"vodcluster/acm/store"
)

// maxHoldersLogged bounds the subscribers named per package in the
// warning of checkPackages.
const maxHoldersLogged = 8

// checkPackages warns, once per set, of the packages that subscribers
// hold but no title of the catalog ts is in: those subscribers are
// refused (403) every title but those of their other packages, a typo in
// `vodcluster user --package` (or in the users file) included. The users
// file is read again as it changes; the check runs at each read of the
// catalog (every catalog_refresh), so a change of either is seen within
// it. Only a BOSS that lists its packages (boss.PackageLister) is
// checked; an empty catalog (none read yet) is not. catalogMu held.
func (m *Manager) checkPackages(ts []store.Title) {
	pl, ok := m.BOSS.(boss.PackageLister)
	if !ok || len(ts) == 0 {
		return
	}
	inCatalog := make(map[string]bool)
	for _, t := range ts {
		inCatalog[t.Package] = true
	}
	var parts []string
	for pkg, users := range pl.PackageHolders() {
		if inCatalog[pkg] {
			continue
		}
		named := users[:min(len(users), maxHoldersLogged)]
		part := fmt.Sprintf("%q (%s", pkg, strings.Join(named, ", "))
		if more := len(users) - len(named); more > 0 {
			part += fmt.Sprintf(" and %d more", more)
		}
		parts = append(parts, part+")")
	}
	slices.Sort(parts)
	key := strings.Join(parts, "; ")
	if key == m.unknownPackages {
		return
	}
	m.unknownPackages = key
	if key == "" {
		m.log.Info("every package the subscribers hold is in the catalog")
		return
	}
	m.log.Warn("subscribers hold packages that no title of the catalog is in: they are refused (403) every title outside their other packages; check the package names in the users file (vodcluster user NAME --package PKG) against the catalog's",
		"packages", key)
}
