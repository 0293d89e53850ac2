package acm

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"vodcluster/lsm"
)

// errNoSource refuses a request for a title no node the viewer may use
// holds, when none of those nodes can fetch it: they have no origin
// configured (node origin; lsm.NodeSpec.NoOrigin), so they play only the
// titles on their disks. Sent there, the viewer would get a 404 from the
// node. It wraps errNoBandwidth (RTSP 453, HTTP 503 + Retry-After; the
// outcome no_capacity), as the other refusals for want of a node do; the
// front doors say no node holds the title and none can fetch it.
var errNoSource = fmt.Errorf("%w: no node holds the title and none can fetch it", errNoBandwidth)

// noSourceLocked reports whether r is refused at once with errNoSource
// (mu held): every node r could use that may still come back by itself
// has no origin and none holds r's title (lsm.Scheduler.NoSource), the
// nodes settled (nodesSettledLocked: right after a start or a takeover,
// a node with an origin may not have registered yet, and r waits in the
// queue for it).
func (m *Manager) noSourceLocked(r *lsm.Request, now time.Time) bool {
	return m.nodesSettledLocked(now) && m.sched.NoSource(r, m.deadBefore(now))
}

// refuseNoSourceLocked refuses r of user at once when noSourceLocked
// (mu held; released, and the refusal logged, when it returns
// errNoSource): sent to a node without an origin, the viewer would get a
// 404 there. nil, with mu still held, otherwise.
func (m *Manager) refuseNoSourceLocked(r *lsm.Request, user string, now time.Time) error {
	if !m.noSourceLocked(r, now) {
		return nil
	}
	return m.noSourceRefusedLocked(r, user, now, now)
}

// noSourceRefusedLocked logs the refusal of r of user with errNoSource,
// asked at asked (its wait in the queue, when it waited, is logged), and
// returns errNoSource (mu held, and released).
func (m *Manager) noSourceRefusedLocked(r *lsm.Request, user string, asked, now time.Time) error {
	why, ok := m.noSourceWhyLocked(r)
	if !ok { // the nodes without an origin are out of service for now
		why = "no node the viewer may use holds the title and none can fetch it: they have no origin configured (node origin)"
	}
	m.mu.Unlock()
	msg, attrs := "admission refused at once: ", []any{"title", r.Title, "user", user, "site", r.Site}
	if waited := now.Sub(asked); waited > 0 {
		msg, attrs = "admission refused while it waited: ", append(attrs, "waited", waited)
	}
	m.capRefusals.log(m.log, now, refusedNoSource, slog.LevelWarn, msg+why, attrs...)
	return errNoSource
}

// refuseNoSourceQueuedLocked refuses with errNoSource the waiting
// requests that noSourceLocked now holds for (the last node with an
// origin they could use drained, set to weight 0 or long dead while they
// waited, or they came while the nodes were settling) and wakes their
// waiters (mu held): waiting out the queue deadline brings them no node.
func (m *Manager) refuseNoSourceQueuedLocked(now time.Time) {
	m.refuseQueuedLocked(now, m.sched.RefuseNoSource, errNoSource)
}

// noSourceWhyLocked says why r has no source (mu held), for the
// operator's log, when no node in service that r could use (its
// protocol, and its site with SiteOnly) holds r's title and none of them
// has an origin, while at least one is in service; ok is false otherwise.
// It names at most 8 of those nodes, and the nodes with an origin that an
// operator holds back (fillersHeldLocked), which the viewer could use.
func (m *Manager) noSourceWhyLocked(r *lsm.Request) (why string, ok bool) {
	if m.sched.HoldersInServiceFor(r) > 0 || m.sched.FillersInServiceFor(r) > 0 {
		return "", false
	}
	const most = 8
	var ids []string
	k := 0
	for _, n := range m.sched.Nodes {
		if !m.sched.InService(n) || r.Requires&^n.Features != 0 || (r.SiteOnly && r.Site != "" && n.Site != r.Site) {
			continue
		}
		if k++; k <= most {
			ids = append(ids, n.ID)
		}
	}
	if k == 0 {
		return "", false
	}
	s := strings.Join(ids, ", ")
	if k > most {
		s += fmt.Sprintf(" and %d more", k-most)
	}
	which := "no node in service"
	if r.SiteOnly && r.Site != "" {
		which = fmt.Sprintf("no node in service of the viewer's site %q (site_only)", r.Site)
	}
	why = which + " holds the title and none can fetch it: they have no origin configured (node origin) and play only the titles on their disks: " + s
	if held := m.fillersHeldLocked(r); held != "" {
		why += "; the nodes with an origin it could use are drained or at weight 0 (vodctl node NODE --undrain or --weight puts one back): " + held
	}
	return why, true
}

// fillersHeldLocked names the nodes with an origin that r could use (its
// protocol, and its site with SiteOnly) which are drained or at weight 0,
// each with its state, at most 8 (mu held); "" when none.
func (m *Manager) fillersHeldLocked(r *lsm.Request) string {
	const most = 8
	var held []string
	k := 0
	for _, n := range m.sched.Nodes {
		if n.NoOrigin || r.Requires&^n.Features != 0 || (r.SiteOnly && r.Site != "" && n.Site != r.Site) || (!n.Draining && n.Weight > 0) {
			continue
		}
		state := "drained"
		if !n.Draining {
			state = "weight 0"
		}
		if k++; k <= most {
			held = append(held, n.ID+" ("+state+")")
		}
	}
	s := strings.Join(held, ", ")
	if k > most {
		s += fmt.Sprintf(" and %d more", k-most)
	}
	return s
}
