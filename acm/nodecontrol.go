package acm

import (
	"context"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/lsm"
	pb "vodcluster/proto/vodcluster/v1"
)

// idPattern is the shape of node and title ids.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// nodeControl implements pb.NodeControlServer.
type nodeControl struct {
	pb.UnimplementedNodeControlServer
	m *Manager
}

// checkAddr requires host:port with a host clients can reach: an IP
// address (an IPv6 one may name its zone) or a DNS name (RFC 1123: at
// most 253 bytes, labels of letters, digits, '-' and '_' of at most 63),
// not an address that means every address (0.0.0.0, ::, in any
// spelling), which a node announces when it listens on all of them
// without an advertise_host; and a port number 1..65535. Viewers are
// redirected to it, and an address no client can reach was taken (a
// 10 kB host, a port "abc").
func checkAddr(field, a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil || !reachableHost(host) || !validPort(port) {
		return status.Errorf(codes.InvalidArgument, "%s %q: want host:port with a host clients can reach (the node's advertise_host) and a port 1..65535", field, clip(a))
	}
	return nil
}

// reachableHost reports whether host is an IP address other than the
// unspecified one, or a DNS name (checkAddr).
func reachableHost(host string) bool {
	ip, _, _ := strings.Cut(host, "%") // fe80::1%eth0
	if parsed := net.ParseIP(ip); parsed != nil {
		return !parsed.IsUnspecified()
	}
	return dnsName.MatchString(host) && len(host) <= 253
}

// dnsName is a DNS host name: dot-separated labels of letters, digits,
// '-' and '_' (seen in internal names), neither starting nor ending with
// '-', at most 63 bytes each; a final dot allowed.
var dnsName = regexp.MustCompile(`^([A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\.)*[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\.?$`)

// validPort reports whether p is a port number 1..65535 in decimal.
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535 && p[0] != '+'
}

// Register implements pb.NodeControlServer: the node joins lsm (alive,
// its titles in the replica view), sessions of the node kept from before
// get their reservations back, a draining node is told so again, and
// the prefetches lost with its old stream are sent again
// (lostPrefetchesLocked). INVALID_ARGUMENT for a malformed id, address, capacity, weight, stored
// title or partial;
// ALREADY_EXISTS while a live node (heartbeats arriving) holds the id at
// another RTSP address.
func (nc *nodeControl) Register(_ context.Context, req *pb.RegisterRequest) (*pb.RegisterResponse, error) {
	m := nc.m
	if !idPattern.MatchString(req.GetNodeId()) {
		return nil, status.Errorf(codes.InvalidArgument, "node_id %q: want [A-Za-z0-9._-]{1,128}", req.GetNodeId())
	}
	if err := checkAddr("rtsp_addr", req.GetRtspAddr()); err != nil {
		return nil, err
	}
	if req.GetHttpAddr() != "" {
		if err := checkAddr("http_addr", req.GetHttpAddr()); err != nil {
			return nil, err
		}
	}
	if req.GetRtspsAddr() != "" { // where viewers that came over RTSPS are sent
		if err := checkAddr("rtsps_addr", req.GetRtspsAddr()); err != nil {
			return nil, err
		}
	}
	c := req.GetCapacity()
	if c.GetEgressBps() <= 0 || c.GetMaxSessions() < 0 || c.GetDiskBytes() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "capacity: egress_bps must be > 0, max_sessions and disk_bytes >= 0")
	}
	if w := req.GetWeight(); w < 0 || w > lsm.MaxWeight {
		return nil, status.Errorf(codes.InvalidArgument, "weight %d out of 0..%d (IPVS's range; 0 = the default, %d)", w, lsm.MaxWeight, lsm.DefaultWeight)
	}
	if why := checkStoredTitles(req.GetTitles()); why != "" {
		return nil, status.Error(codes.InvalidArgument, why)
	}
	var used int64
	for _, t := range req.GetTitles() {
		used += t.GetStoredBytes()
	}
	if why := checkPartials(req.GetPartials()); why != "" {
		return nil, status.Error(codes.InvalidArgument, why)
	}
	now := m.now()
	id := req.GetNodeId()
	var changed []*session
	var heardBefore time.Time // when the node, alive, was last heard of before this registration
	m.mu.Lock()
	old := m.sched.Node(id)
	if old != nil && old.Alive {
		heardBefore = old.LastHeartbeat
	}
	if old != nil && old.Alive && old.RTSPAddr != req.GetRtspAddr() {
		// Two processes with one id would take turns replacing each
		// other's registration, and each time the manager would end the
		// sessions the other plays. A node that moved is accepted once
		// the old address misses its heartbeats.
		addr := old.RTSPAddr
		m.mu.Unlock()
		m.log.Warn("registration refused: node id in use by a live node at another address", "node", id, "live_rtsp", addr, "refused_rtsp", req.GetRtspAddr())
		return nil, status.Errorf(codes.AlreadyExists, "node id %q is in use by a live node at %s (its heartbeats arrive): give this node another id, or stop the other", id, addr)
	}
	var features lsm.Feature
	if !req.GetTcpOnly() {
		features |= lsm.FeatureUDP
	}
	if req.GetRtspsAddr() != "" {
		features |= lsm.FeatureRTSPS
	}
	if req.GetHttpAddr() != "" {
		features |= lsm.FeatureHTTP
		if req.GetHttpTls() {
			features |= lsm.FeatureHTTPS
		}
	}
	var started time.Time // its process's start: another one slow-starts again (lsm.NodeSpec.Started)
	if ms := req.GetStartedAtUnixMs(); ms > 0 {
		started = time.UnixMilli(ms)
	}
	_, err := m.sched.AddNode(lsm.NodeSpec{
		ID: id, RTSPAddr: req.GetRtspAddr(), HTTPAddr: req.GetHttpAddr(), Weight: int(req.GetWeight()), Site: req.GetSite(), Features: features,
		NoOrigin: req.GetNoOrigin(), // it plays only the titles it holds: no fill, no prefetch there
		Capacity: lsm.Capacity{EgressBps: c.GetEgressBps(), MaxSessions: int(c.GetMaxSessions()), DiskBytes: c.GetDiskBytes()},
		Started:  started,
	}, now)
	if err != nil {
		m.mu.Unlock()
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	ns := m.nodes[id]
	if ns == nil {
		ns = newNodeState(id)
		m.nodes[id] = ns
		for _, sid := range m.forgotEnded[id] {
			ns.endedAway[sid] = true // to end if it plays them (endUnknownLocked)
		}
		delete(m.forgotEnded, id)
		for _, s := range m.sessions {
			if s.Node == id {
				ns.addSession(s)
			}
		}
	}
	// A registration opens the node's next heartbeat stream (a node
	// registers, then streams): a stream of before is done, though its
	// end may not have reached this manager yet (a node restarted at
	// once). Its generation ends now, so that its sender takes none of
	// the commands queued below (they wait for the new stream; one sent
	// down the dead stream was lost) and its end, seen later, is not
	// taken for this registration's (nodeLeft, streamBroke).
	ns.stopStream()
	ns.streamGen++
	ns.regGen++
	if req.GetNoOrigin() {
		m.dropPrefetchesLocked(ns, req.GetTitles(), now) // it cannot fetch: not sent to its new stream
	}
	ns.httpTLS, ns.rtspsAddr = req.GetHttpTls(), req.GetRtspsAddr()
	if m.RTSPTLS != nil && ns.rtspsAddr == "" {
		m.log.Warn("node has no RTSPS listener: viewers that come to the front door over RTSPS are not sent to it (their players cannot follow a redirect to plain RTSP); give it rtsp_tls_cert_file",
			"node", id, "rtsp", req.GetRtspAddr())
	}
	if m.HTTPTLS != nil && req.GetHttpAddr() != "" && !ns.httpTLS {
		m.log.Warn("node serves plain HTTP behind the HTTPS front door: HTTP viewers are not sent to it (browsers on https:// pages refuse a redirect to http://, and their tokens would travel in clear); give it http_tls_cert_file",
			"node", id, "http", req.GetHttpAddr())
	}
	lost := m.lostPrefetchesLocked(ns, req, now) // sent down the stream that broke
	holdings, free := m.syncTitlesLocked(ns, req.GetTitles(), lost, c.GetDiskBytes()-used, now)
	ns.queue = m.dropFailedPrefetchCmdsLocked(ns, ns.queue)
	partials := m.syncPartialsLocked(ns, req.GetPartials())
	// free is the budget's room: a registration does not carry the file
	// system's free space, so lsm counts the budget alone (DiskFreeKnown
	// false) until the node's first load report, sent as its heartbeat
	// stream opens.
	_ = m.sched.Heartbeat(id, lsm.Report{Titles: holdings, Partials: partials, DiskFreeBytes: free}, now)
	if !ns.awaitFirst { // else it was heard of last before the registration it sent no report after
		ns.heardBefore = heardBefore
	}
	ns.reported, ns.diskFree, ns.awaitFirst = true, free, true
	ns.shownFree = max(c.GetDiskBytes()-used, 0)
	ns.processStart = started
	changed, _ = m.reserveOrphansLocked(ns)
	m.restoreEvictionsLocked(ns) // the operator's, ordered while it was down
	// The node refuses sessions while it drains: tell it the drain state,
	// which an operator may have changed while it was away.
	m.applyNodeSettingLocked(id, true)
	m.sendProtectLocked(ns, true)
	m.reexpectNodeLocked(ns, now) // its viewers on their way, which a restart lost
	sessions := len(ns.sessions)
	m.mu.Unlock()
	// sessions_restored: the sessions the manager holds on the node, its
	// reservations booked again; its first load report ends those it no
	// longer plays, and says how many (it said "sessions=1" of a session
	// ended as not on the node a moment later).
	attrs := []any{"node", id, "rtsp", req.GetRtspAddr(), "http", req.GetHttpAddr(),
		"egress_bps", c.GetEgressBps(), "titles", len(holdings), "sessions_restored", sessions}
	if a := req.GetRtspsAddr(); a != "" {
		attrs = append(attrs, "rtsps", a)
	}
	if site := req.GetSite(); site != "" {
		attrs = append(attrs, "site", site)
	}
	if req.GetNoOrigin() {
		attrs = append(attrs, "no_origin", true) // viewers of the titles it holds only; no prefetch
	}
	if req.GetTcpOnly() {
		attrs = append(attrs, "tcp_only", true) // no SETUP that offers only UDP
	}
	m.log.Info("node registered", attrs...)
	if site := req.GetSite(); len(m.Sites) > 0 && site != "" && !m.sites.has(site) {
		m.log.Warn("node's site is none of the manager's sites: no viewer is placed there first (a misspelt site, or manager.sites lacks it)",
			"node", id, "site", site, "sites", m.sites.namesList())
	}
	if pause := time.Duration(req.GetPauseTimeoutMs()) * time.Millisecond; pause > 0 && m.TokenTTL > pause {
		m.log.Warn("token_ttl is longer than the node's pause_timeout: a player paused past pause_timeout that seeks with a redirect it kept gets 401 from the node until its token expires; keep token_ttl at most pause_timeout",
			"node", id, "token_ttl", m.TokenTTL, "pause_timeout", pause)
	}
	m.noteTransport(id, storedTransport{TCPOnly: req.GetTcpOnly(), Site: req.GetSite()})
	m.persistAll(changed)
	m.kickPump()
	m.kickPlanSoon() // new room and egress to plan for, with the nodes starting along
	return &pb.RegisterResponse{HeartbeatIntervalMs: m.sched.Config.HeartbeatInterval.Milliseconds()}, nil
}

// reserveOrphansLocked books again the reservations of node ns's sessions
// that have none (loaded from the store, or orphaned when the node died):
// the node is registered or reporting again. A session whose reservation
// cannot be rebuilt ends. It returns the sessions to persist (ended, or
// now held by this manager on a shared store) and how many got their
// reservation back. A session with its reservation whose entry names
// another manager (loadSessions saw it: the node was with that manager
// meanwhile, which took the entry over) is claimed back too.
func (m *Manager) reserveOrphansLocked(ns *nodeState) (changed []*session, n int) {
	for _, s := range ns.sessionList() {
		if s.reserved {
			if m.claimLocked(s) {
				changed = append(changed, s)
			}
			continue
		}
		res, err := m.sched.Reserve(ns.id, s.Title, s.BitrateBps)
		if err != nil {
			m.endLocked(s, "reservation not rebuilt: "+err.Error())
			changed = append(changed, s)
			continue
		}
		s.res, s.reserved, s.restored, s.orphaned = res, true, false, time.Time{}
		m.countLocked(s)
		n++
		if m.claimLocked(s) { // the node moved here: this manager holds its sessions now
			changed = append(changed, s)
		}
	}
	return changed, n
}
