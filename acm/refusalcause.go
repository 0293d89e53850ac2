package acm

import (
	"fmt"
	"strings"

	"vodcluster/acm/store"
	"vodcluster/lsm"
)

// Why no node could take a viewer, for the refusal and the operator's log.

// errNoDiskRoom refuses a session that a node could take but for a fill
// of its title: no such node has disk room for it (its disk taken by
// titles playing, filling or pinned, or its file system too full). It
// wraps errNoBandwidth (RTSP 453, HTTP 503 + Retry-After; the outcome
// no_capacity); the front doors say it is disk room.
var errNoDiskRoom = fmt.Errorf("%w: no node that could take it has disk room for the title", errNoBandwidth)

// errOriginBusy refuses a session of a title no node that may serve the
// viewer holds (with site_only: none of its site) while every
// origin channel is taken by viewers' fills in progress (prefetches give
// theirs up: lsm; storage.origin_channels):
// the nodes have headroom, the title has no way onto one yet. It wraps
// errNoBandwidth (RTSP 453, HTTP 503 + Retry-After; the outcome
// no_capacity); the front doors say it is the origin's channels (they
// said "not enough bandwidth", sending the operator to the nodes' egress).
var errOriginBusy = fmt.Errorf("%w: no node holds the title and every origin channel is busy", errNoBandwidth)

// refusalLocked says why no node could take a session of t (mu held): no
// egress headroom, or headroom but no disk room for a fill (disks full of
// titles playing, filling or pinned), for the operator's log.
func (m *Manager) refusalLocked(t store.Title) string { return m.refusalInLocked(t, "", 0) }

// featureRefusals say why a viewer requiring a feature is refused when no
// node in service offers it, for the operator's log.
var featureRefusals = []struct {
	f   lsm.Feature
	why string
}{
	{lsm.FeatureRTSPS, "the viewer came over RTSPS and no node in service has RTSPS (node rtsp_tls_cert_file): its player cannot follow a redirect to plain RTSP"},
	{lsm.FeatureHTTP, "the viewer came over HTTP and no node in service has an HTTP address (node http_listen)"},
	{lsm.FeatureUDP, "the viewer's SETUP offers only UDP and no node in service serves UDP (those in service have tcp_only)"},
	{lsm.FeatureHTTPS, "the viewer came over HTTPS and no node in service has HTTPS (node http_tls_cert_file): a browser on an https:// page refuses a redirect to http://"},
}

// refusalInLocked is refusalLocked among the nodes of site, a viewer's
// site it is kept to (SiteOnly); "" = every node; and for a request that
// requires features (an RTSPS viewer: only nodes with RTSPS; see
// requiresLocked).
func (m *Manager) refusalInLocked(t store.Title, site string, requires lsm.Feature) string {
	why, _ := m.refusalCauseLocked(t, site, requires)
	return why
}

// refusalCauseLocked is refusalInLocked, with the reason of the refusal
// its log lines are collapsed by (refusalNotes): refusedNoDiskRoom when a
// node could take the session but for a fill of the title
// (errNoDiskRoom), refusedNoSource when no node holds the title and none
// can fetch it (errNoSource), refusedOriginChannels when no node holds the
// title and every origin channel is busy, refusedNoNodeReporting when no
// node has registered yet or, on a standby, none reports to it (saying so
// and where the nodes are; errNoNodeReporting: the viewer is told no node
// reports, not that the nodes lack bandwidth), refusedNoBandwidth
// otherwise.
func (m *Manager) refusalCauseLocked(t store.Title, site string, requires lsm.Feature) (why, reason string) {
	if m.standby() && !m.sched.AnyNodeReporting(m.deadBefore(m.now())) {
		// It never refuses for want of a node (noNodeReportingLocked):
		// the operator is told where the nodes are.
		return "no node reports to this manager, a standby (it does not hold the planner lock): the nodes report to the active manager, and follow the front door's address (the virtual IP) to a standby within seconds; if this one holds that address and none comes, check that the nodes reach its NodeControl address " +
			m.GRPCAddr() + " (node.manager) with its cluster secret (secret_file), and that the other manager was stopped", refusedNoNodeReporting
	}
	if !m.sched.AnyNodeReporting(m.deadBefore(m.now())) {
		// The manager's first restore_grace (after it such a request is
		// refused at once: noNodeReportingLocked): a viewer told the
		// cluster is full (453) would wait for nothing but the nodes.
		return "no node has registered with the manager since it started or took over (they may still be starting; after restore_grace such a request is refused at once); start the nodes, or check that they reach its NodeControl address " +
			m.GRPCAddr() + " (node.manager) with the cluster secret (secret_file)", refusedNoNodeReporting
	}
	if site == "" && !m.anyInServiceLocked() {
		// Not a feature the nodes lack: there is no node to offer one
		// (the manager's nodes not registered yet, or each dead within
		// restore_grace, drained or at weight 0).
		return "no node is in service (alive, not drained, weight above 0): none has registered yet, or each is dead (it may come back within restore_grace), drained or at weight 0", refusedNoBandwidth
	}
	for _, fr := range featureRefusals {
		if requires&fr.f == 0 {
			continue
		}
		offered := false
		for _, n := range m.sched.Nodes {
			if n.Features&fr.f != 0 && m.sched.InService(n) {
				offered = true
				break
			}
		}
		if !offered {
			return fr.why, refusedNoBandwidth
		}
	}
	if why, ok := m.noSourceWhyLocked(&lsm.Request{Title: t.ID, Site: site, SiteOnly: site != "", Requires: requires}); ok {
		return why, refusedNoSource
	}
	if m.sched.OriginChannelsBusy() && m.sched.HoldersInServiceFor(&lsm.Request{Title: t.ID, Site: site, SiteOnly: site != "", Requires: requires}) == 0 {
		// Holders as reported, the prefetches that gave their channel
		// away among them (lsm counts those only with the origin down).
		if m.sched.HoldersInServiceFor(&lsm.Request{Title: t.ID, Site: site, SiteOnly: site != "", Requires: requires, OriginDown: true}) > 0 {
			return "the nodes that may serve the viewer hold the title only as prefetches waiting for an origin channel, and every origin channel is taken by viewers' fills, in progress or booked for viewers on their way (storage.origin_channels; vodctl fills: origin wait)", refusedOriginChannels
		}
		if site != "" {
			return fmt.Sprintf("no node of the viewer's site %q (site_only) holds the title and every origin channel is taken by viewers' fills, in progress or booked for viewers on their way (prefetches give theirs up; storage.origin_channels; vodctl fills)", site), refusedOriginChannels
		}
		return "no node holds the title and every origin channel is taken by viewers' fills, in progress or booked for viewers on their way (prefetches give theirs up; storage.origin_channels; vodctl fills)", refusedOriginChannels
	}
	which := "no node"
	if site != "" {
		which = fmt.Sprintf("no node of the viewer's site %q (site_only)", site)
		inService := false
		for _, n := range m.sched.Nodes {
			if n.Site == site && m.sched.InService(n) {
				inService = true
				break
			}
		}
		if !inService {
			return which + " is in service (alive, not drained, weight above 0)", refusedNoNodeInService
		}
	}
	// The scheduler's admission rule (Eligible) without the disk, then
	// with it: a node that passes the first and not the second lacks room.
	noDisk := lsm.Request{Title: t.ID, Bitrate: t.BitrateBps}
	withDisk := lsm.Request{Title: t.ID, Bitrate: t.BitrateBps, Bytes: t.SizeBytes}
	lacksRoom, tooSmall := false, true
	var faulty []string // nodes that could take it but for their disk fault
	for i, n := range m.sched.Nodes {
		if site != "" && n.Site != site {
			continue
		}
		if n.DiskFault {
			if !m.sched.Eligible(i, &noDisk) && m.eligibleButForDiskFault(i, &noDisk) {
				faulty = append(faulty, n.ID)
			}
			continue
		}
		if m.sched.Eligible(i, &noDisk) && !m.sched.Eligible(i, &withDisk) {
			lacksRoom = true
			tooSmall = tooSmall && n.Capacity.DiskBytes > 0 && n.Capacity.DiskBytes < t.SizeBytes
		}
	}
	switch {
	case len(faulty) > 0 && !lacksRoom:
		verb := "reports"
		if len(faulty) > 1 {
			verb = "report"
		}
		return fmt.Sprintf("%s that could take the session can fill the title: %s %s a disk fault (%s)", which, strings.Join(faulty, ", "),
			verb, diskFaultHelp), refusedNoDiskRoom
	case lacksRoom && tooSmall:
		return fmt.Sprintf("%s that could take the session has a disk as large as the title (%d bytes; node disk_bytes)", which, t.SizeBytes), refusedNoDiskRoom
	case lacksRoom:
		return which + " that could take the session has disk room for the title (its disk is taken by titles playing, filling (a prefetch no viewer needs gives way) or pinned, or its file system, as its load reports give it, has too little free space)", refusedNoDiskRoom
	}
	if site != "" {
		return which + " has headroom for the title (egress, session cap, slow start or overload)", refusedNoBandwidth
	}
	return "no node in service has headroom for the title (egress, session cap, slow start or overload)", refusedNoBandwidth
}

// anyInServiceLocked reports whether some node is in service (alive, not
// drained, weight above 0; mu held).
func (m *Manager) anyInServiceLocked() bool {
	for _, n := range m.sched.Nodes {
		if m.sched.InService(n) {
			return true
		}
	}
	return false
}

// eligibleButForDiskFault reports whether node i, which reports a disk
// fault, could take r were it not for the fault (mu held, as for every use
// of the scheduler): Eligible refuses such a node a fill whatever its
// disk's room, so it is asked with the fault set aside for the call.
func (m *Manager) eligibleButForDiskFault(i int, r *lsm.Request) bool {
	n := m.sched.Nodes[i]
	n.DiskFault = false
	defer func() { n.DiskFault = true }()
	return m.sched.Eligible(i, r)
}
