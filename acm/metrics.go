package acm

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"vodcluster/acm/store"
	"vodcluster/proto/metricshttp"
)

// Front-door request outcomes, the "outcome" label of
// vodcluster_frontdoor_requests_total.
const (
	outcomeAdmitted     = "admitted"              // redirected to a node (a new session, or a new token for the viewer's)
	outcomeChallenged   = "challenged"            // 401 asking for credentials: none sent (a player's first request), or a Digest nonce expired or used
	outcomeUnauthorized = "unauthorized"          // 401: wrong or malformed credentials
	outcomeForbidden    = "forbidden"             // the title is outside the subscriber's packages
	outcomeSuspended    = "suspended"             // the operator suspended the subscriber (vodctl suspend)
	outcomeUserLimit    = "user_limit"            // the subscriber has max_sessions_per_user live sessions
	outcomeUnknownTitle = "unknown_title"         // not in the catalog
	outcomeBadRange     = "range_not_satisfiable" // an HTTP GET whose Range asks for no byte of the title (416)
	outcomeBadTransport = "unsupported_transport" // an RTSP SETUP whose Transport no node serves (461), or with none (400)
	outcomeNoCapacity   = "no_capacity"           // no node could take it within the queue deadline
	outcomeOriginDown   = "origin_down"           // no node holds it and the origin is unavailable
	outcomeThrottled    = "throttled"             // too many failed logins from the client
	outcomeRateLimited  = "rate_limited"          // the subscriber is over requests_per_user (title requests at once, refilled every request_refill)
	outcomeUnavailable  = "unavailable"           // store, BOSS or manager unavailable
	outcomeClientGone   = "client_gone"           // the client left before the answer (gave up waiting in the queue)
)

// outcome names the front-door outcome of an admission error (nil:
// admitted).
func outcome(err error) string {
	switch {
	case err == nil:
		return outcomeAdmitted
	case errors.Is(err, errChallenge):
		return outcomeChallenged
	case errors.Is(err, errUnauthorized):
		return outcomeUnauthorized
	case errors.Is(err, errSuspended):
		return outcomeSuspended
	case errors.Is(err, errForbidden):
		return outcomeForbidden
	case errors.Is(err, errUserLimit):
		return outcomeUserLimit
	case errors.Is(err, errNoTitle):
		return outcomeUnknownTitle
	case errors.Is(err, errRangeNotSatisfiable):
		return outcomeBadRange
	case errors.Is(err, errUnsupportedTransport):
		return outcomeBadTransport
	case errors.Is(err, errNoBandwidth):
		return outcomeNoCapacity
	case errors.Is(err, errOriginDown):
		return outcomeOriginDown
	case errors.Is(err, errThrottled):
		return outcomeThrottled
	case errors.Is(err, errRateLimited):
		return outcomeRateLimited
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return outcomeClientGone
	}
	return outcomeUnavailable
}

// requestsTotal counts the front door's answers by protocol and outcome.
var requestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "vodcluster_frontdoor_requests_total",
	Help: "Front-door requests for a title (RTSP DESCRIBE/SETUP, HTTP GET), by protocol (rtsp, rtsps, http) and outcome (admitted, challenged, unauthorized, forbidden, suspended, user_limit, unknown_title, range_not_satisfiable, unsupported_transport, no_capacity, origin_down, throttled, rate_limited, unavailable, client_gone).",
}, []string{"protocol", "outcome"})

// planSeconds is how long the storage plans of this manager took, from
// the view's snapshot to the last order carried out (plan).
var planSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "vodcluster_plan_duration_seconds",
	Help:    "Storage plans of this manager (the planner lock's holder) and how long each took, seconds: the snapshot of the nodes, the view of the catalog, the plan and the orders carried out.",
	Buckets: prometheus.ExponentialBuckets(0.001, 4, 8), // 1 ms .. 16 s
})

// admissionSeconds is how long admissions took, by outcome (admit).
var admissionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name: "vodcluster_admission_duration_seconds",
	Help: "Admissions of front-door title requests by authenticated subscribers and how long each took, seconds, from the entitlement check to the grant or the refusal, the wait in the admission queue included (queue_deadline bounds it), by outcome (as vodcluster_frontdoor_requests_total's: admitted, no_capacity, ...).",
	// 1 ms .. 65.5 s: a queue_deadline up to a minute still lands in a
	// bucket of its own (16 s was the top, a 30 s deadline's refusals
	// all fell in +Inf).
	Buckets: prometheus.ExponentialBuckets(0.001, 2, 17),
}, []string{"outcome"})

// admitTimed is admit, its duration, the wait in the queue included,
// observed in admissionSeconds by its outcome: what the front doors call.
func (m *Manager) admitTimed(ctx context.Context, r admitRequest) (*grant, error) {
	start := time.Now()
	g, err := m.admit(ctx, r)
	admissionSeconds.WithLabelValues(outcome(err)).Observe(time.Since(start).Seconds())
	return g, err
}

// siteAdmissions counts new sessions by the viewer's site and the
// chosen node's, when either has one (manager sites, node site).
var siteAdmissions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "vodcluster_site_admissions_total",
	Help: "New sessions admitted, by the viewer's site (client_site: the site of the manager's sites whose prefix holds its address; empty for none) and the site of the node it was sent to (node_site; empty for none). client_site != node_site: served across sites. Counted only when either has a site.",
}, []string{"client_site", "node_site"})

// supersededTotal counts idle sessions ended for a new request of their
// subscriber at the session limit (supersede.go), by the protocol of the
// session ended.
var supersededTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "vodcluster_superseded_sessions_total",
	Help: "Idle sessions (PAUSEd and silent, or HTTP with no request, longer than the node's session_timeout) ended for a new request of their subscriber at max_sessions_per_user, by the protocol of the session ended (rtsp, rtsps, http).",
}, []string{"protocol"})

// reusesTotal counts the title requests answered with a new token for a
// live session of the same viewer rather than a new session (regrant), by
// the request's protocol.
var reusesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "vodcluster_session_reuses_total",
	Help: "Title requests answered with a new token for a live session of the same viewer instead of a new session, by protocol (rtsp, rtsps, http): over HTTP the same subscriber, title and client address (a player asking again as it seeks; several players behind one address share that one session and its pace), over RTSP a second request on the connection whose viewer has not reached its node.",
}, []string{"protocol"})

// connsRefused counts the front door's connections refused at accept
// because their client address had MaxConnsPerAddr open already
// (proto/connlimit).
var connsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "vodcluster_frontdoor_connections_refused_total",
	Help: "Front-door connections refused at accept (answered 503 or closed) because their client address (an IPv6 client's /64) had max_conns_per_addr open already, by listener (rtsp, rtsps, http).",
}, []string{"listener"})

// frontDoorProtocols are the protocol label values of the front door's
// counters, and the listener values of connsRefused (listen.go names
// each front door's listener by its protocol; an HTTPS front door is
// "http").
var frontDoorProtocols = []string{store.ProtoRTSP, store.ProtoRTSPS, store.ProtoHTTP}

// requestOutcomes are every outcome label value of requestsTotal.
var requestOutcomes = []string{outcomeAdmitted, outcomeChallenged, outcomeUnauthorized, outcomeForbidden,
	outcomeSuspended, outcomeUserLimit, outcomeUnknownTitle, outcomeBadRange, outcomeBadTransport, outcomeNoCapacity,
	outcomeOriginDown, outcomeThrottled, outcomeRateLimited, outcomeUnavailable, outcomeClientGone}

// admissionOutcomes are the outcomes admit can give (admissionSeconds):
// those of requestsTotal but the ones decided before it (challenged,
// throttled, rate_limited, range_not_satisfiable, unsupported_transport:
// the login, request-rate, Range and Transport checks).
var admissionOutcomes = []string{outcomeAdmitted, outcomeUnauthorized, outcomeForbidden, outcomeSuspended,
	outcomeUserLimit, outcomeUnknownTitle, outcomeNoCapacity, outcomeOriginDown, outcomeUnavailable, outcomeClientGone}

// Session record results, the "result" label of
// vodcluster_session_records_total (records.go).
const (
	recordWritten = "written" // appended to the session records file
	recordDropped = "dropped" // the writer was behind by sessionRecordQueue records: the record is lost
	recordFailed  = "failed"  // the record could not be written to the file
)

// sessionRecordResults are the result label values of sessionRecordsTotal.
var sessionRecordResults = []string{recordWritten, recordDropped, recordFailed}

// init creates each series of the labelled counters and histograms whose
// label values are known in advance at 0, so that a scrape before their
// first event already has them: an alerting rule's rate() or increase()
// over a series not yet there gives no data rather than 0, and absent()
// would fire. vodcluster_site_admissions_total{client_site,node_site} is
// left to its first event: its node_site values are the nodes' sites,
// not known to the manager until they register.
func init() {
	for _, p := range frontDoorProtocols {
		for _, o := range requestOutcomes {
			requestsTotal.WithLabelValues(p, o)
		}
		supersededTotal.WithLabelValues(p)
		reusesTotal.WithLabelValues(p)
		connsRefused.WithLabelValues(p)
	}
	for _, o := range admissionOutcomes {
		admissionSeconds.WithLabelValues(o)
	}
	for _, r := range sessionRecordResults {
		sessionRecordsTotal.WithLabelValues(r)
	}
}

// countRequest counts one front-door answer of protocol with err's outcome.
func countRequest(protocol string, err error) {
	requestsTotal.WithLabelValues(protocol, outcome(err)).Inc()
}

// metricsCollector reads the manager's state at each scrape. The
// vodcluster_node_* series of the active manager cover every node it
// knows (a dead one until forgotten); those of a standby only the nodes
// alive there.
type metricsCollector struct{ m *Manager }

var (
	descSessions   = prometheus.NewDesc("vodcluster_sessions", "Live sessions, by state (admitted: redirected, not yet playing; playing) and protocol.", []string{"state", "protocol"}, nil)
	descQueue      = prometheus.NewDesc("vodcluster_admission_queue_requests", "Requests waiting in the admission queue for a node with headroom.", nil, nil)
	descFills      = prometheus.NewDesc("vodcluster_fills", "Fills from the origin in progress on the alive nodes, as the scheduler counts them (on demand and prefetches).", nil, nil)
	descOriginUp   = prometheus.NewDesc("vodcluster_origin_up", "1 while the origin answers its health checks and takes the manager's credential, else 0 (and 0 from the manager's start until a check passes).", nil, nil)
	descLeader     = prometheus.NewDesc("vodcluster_leader", "1 while this manager holds the planner lock (plans; the active manager), else 0.", nil, nil)
	descStoreUp    = prometheus.NewDesc("vodcluster_store_up", "1 while the manager's store (Redis, or the embedded one) answers, 0 while the manager takes it as unavailable (its last call failed or did not answer within store_timeout, or it refuses writes: a Redis at maxmemory, or a replica): it admits no viewer then (/healthz 503), and no manager holds the planner lock.", nil, nil)
	descTitles     = prometheus.NewDesc("vodcluster_catalog_titles", "Titles in the catalog.", nil, nil)
	descNodeUp     = prometheus.NewDesc("vodcluster_node_up", "1 while the node is alive (heartbeats arrive), else 0, until an operator forgets it (vodctl node forget); 0 also for a node known from the store that has not registered since the manager started. A standby manager exports the node series only of the nodes alive there.", []string{"node"}, nil)
	descNodeDrain  = prometheus.NewDesc("vodcluster_node_draining", "1 while the node is drained (no new sessions), else 0.", []string{"node"}, nil)
	descNodeCap    = prometheus.NewDesc("vodcluster_node_capacity_bits_per_second", "Egress the node announced, bit/s.", []string{"node"}, nil)
	descNodeResv   = prometheus.NewDesc("vodcluster_node_reserved_bits_per_second", "Bit/s reserved by the sessions admitted to the node.", []string{"node"}, nil)
	descNodeEgress = prometheus.NewDesc("vodcluster_node_egress_bits_per_second", "Egress the node measured over its last report interval, bit/s (0 while dead).", []string{"node"}, nil)
	descNodeSess   = prometheus.NewDesc("vodcluster_node_sessions", "Sessions admitted to the node.", []string{"node"}, nil)
	descNodeLoad   = prometheus.NewDesc("vodcluster_node_load", "The scheduler's load formula for the node (0.5: half its egress reserved, no fill).", []string{"node"}, nil)
	descNodeDisk   = prometheus.NewDesc("vodcluster_node_disk_free_bytes", "Free title-cache disk the node reported, bytes.", []string{"node"}, nil)
	descNodeTitles = prometheus.NewDesc("vodcluster_node_titles", "Titles held or filling on the node.", []string{"node"}, nil)
	// Counted by the manager per node (nodeState.admissions, noShows):
	// many no-shows of one node say its viewers cannot reach the address
	// it announces (a firewall, a NAT, a wrong rtsp/http address) while
	// its heartbeats reach the manager (VodclusterViewersNotReachingNode).
	descNodeAdmit  = prometheus.NewDesc("vodcluster_node_admissions_total", "New sessions admitted to the node (redirects to it; a viewer's new token for its session is not counted).", []string{"node"}, nil)
	descNodeNoShow = prometheus.NewDesc("vodcluster_node_no_shows_total", "Sessions admitted to the node whose viewer never reached it (ended as no-show after token_ttl plus the no-show grace): a node its viewers cannot reach shows here.", []string{"node"}, nil)
	descNodeInfo   = prometheus.NewDesc("vodcluster_node_info", "1 for each node, labelled with its site (empty for none) and tcp_only (true: it sends RTSP media over TCP only): join on node to sum the other vodcluster_node_* series by site or by transport.", []string{"node", "site", "tcp_only"}, nil)
)

// Describe implements prometheus.Collector.
func (c metricsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSessions, descQueue, descFills, descOriginUp, descLeader, descStoreUp, descTitles,
		descNodeUp, descNodeDrain, descNodeCap, descNodeResv, descNodeEgress, descNodeSess, descNodeLoad, descNodeDisk, descNodeTitles, descNodeAdmit, descNodeNoShow, descNodeInfo} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: one pass over the manager's
// state under its lock.
func (c metricsCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	type key struct{ state, protocol string }
	sessions := map[key]int{}
	for _, st := range []string{store.StateAdmitted, store.StatePlaying} {
		for _, p := range []string{store.ProtoRTSP, store.ProtoRTSPS, store.ProtoHTTP} {
			sessions[key{st, p}] = 0
		}
	}
	m.mu.Lock()
	for _, s := range m.sessions {
		sessions[key{s.State, s.Protocol}]++
	}
	gauge(descQueue, float64(m.sched.Queued()))
	gauge(descFills, float64(m.sched.LiveFilling()))
	// Per-node series: the active manager exports every node it knows,
	// a dead one with vodcluster_node_up 0 until an operator forgets it
	// (vodctl node forget); a standby only those alive here (their
	// heartbeats arrive at it): its record of a node that went back to
	// the active manager is stale, and would alert as down.
	standby := !m.Leader()
	for _, n := range m.sched.Nodes {
		if standby && !n.Alive {
			continue
		}
		egress := float64(n.EgressBps)
		if !n.Alive {
			egress = 0
		}
		gauge(descNodeUp, b(n.Alive), n.ID)
		gauge(descNodeDrain, b(n.Draining), n.ID)
		gauge(descNodeCap, float64(n.Capacity.EgressBps), n.ID)
		gauge(descNodeResv, float64(n.ReservedBps), n.ID)
		gauge(descNodeEgress, egress, n.ID)
		gauge(descNodeSess, float64(n.Sessions), n.ID)
		gauge(descNodeLoad, m.sched.Load(n.Index), n.ID)
		gauge(descNodeDisk, float64(m.diskFreeShown(n)), n.ID)
		gauge(descNodeTitles, float64(n.Titles()), n.ID)
		gauge(descNodeInfo, 1, n.ID, n.Site, strconv.FormatBool(tcpOnly(n)))
		if ns := m.nodes[n.ID]; ns != nil {
			ch <- prometheus.MustNewConstMetric(descNodeAdmit, prometheus.CounterValue, float64(ns.admissions), n.ID)
			ch <- prometheus.MustNewConstMetric(descNodeNoShow, prometheus.CounterValue, float64(ns.noShows), n.ID)
		}
	}
	for _, id := range m.notRegisteredLocked() { // down since before a restart: still alerting
		gauge(descNodeUp, 0, id)
	}
	m.mu.Unlock()
	for k, v := range sessions {
		gauge(descSessions, float64(v), k.state, k.protocol)
	}
	// Up once a check passed since the start, down after originDownAfter
	// failed in a row: one lost answer (originMissed) is not an outage.
	gauge(descOriginUp, b(m.origin != nil && m.originHeard.Load() && !m.originDown.Load()))
	gauge(descLeader, b(m.Leader()))
	gauge(descStoreUp, b(!m.health.storeDown.Load())) // as /healthz: the health check reads it again while down
	gauge(descTitles, float64(len(m.titles())))
}

// startMetrics serves /metrics on MetricsListen, when set.
func (m *Manager) startMetrics() error {
	if m.MetricsListen == "" {
		return nil
	}
	srv, err := metricshttp.Serve(m.MetricsListen, metricsCollector{m}, requestsTotal, planSeconds, admissionSeconds, sessionRecordsTotal, siteAdmissions, supersededTotal, reusesTotal,
		connsRefused)
	if err != nil {
		return err
	}
	m.metrics = srv
	return nil
}

// MetricsAddr returns the /metrics endpoint's address, "" without one;
// valid after Start.
func (m *Manager) MetricsAddr() string {
	if m.metrics == nil {
		return ""
	}
	return m.metrics.Addr()
}
