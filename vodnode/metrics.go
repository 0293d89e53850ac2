package vodnode

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"vodcluster/proto/metricshttp"
)

// nodeCollector reads the node's state at each scrape.
type nodeCollector struct{ n *Node }

var (
	descNodeSessions = prometheus.NewDesc("vodnode_sessions", "Live sessions on the node, by protocol (rtsp, rtsps, http).", []string{"protocol"}, nil)
	descNodeReserved = prometheus.NewDesc("vodnode_reserved_bits_per_second", "Bit/s the node's live sessions reserve (their titles' bitrates).", nil, nil)
	descNodeCapacity = prometheus.NewDesc("vodnode_capacity_bits_per_second", "Egress the node may reserve (egress_bps), bit/s.", nil, nil)
	descNodeSent     = prometheus.NewDesc("vodnode_sent_bytes_total", "Bytes sent to viewers (RTP, RTCP and interleaving headers, and HTTP bodies).", nil, nil)
	descNodeOrigin   = prometheus.NewDesc("vodnode_origin_bytes_total", "Bytes received from the origin by fills.", nil, nil)
	descNodeOriginRg = prometheus.NewDesc("vodnode_origin_range_bytes_total", "Bytes received from the origin for what viewers ask for far ahead of their title's fill: HTTP ranges (a player's duration probe or seek; sent on, not cached; a range cut short leaves some unsent) and RTSP plays (written into the title's file ahead of its fill, which writes them again). Not in vodnode_origin_bytes_total.", nil, nil)
	descNodeFillsNow = prometheus.NewDesc("vodnode_fills", "Fills from the origin in progress.", nil, nil)
	descNodeFills    = prometheus.NewDesc("vodnode_fills_started_total", "Fills from the origin started since the node started.", nil, nil)
	descNodeFailed   = prometheus.NewDesc("vodnode_fills_failed_total", "Fills from the origin that failed since the node started, by cause: origin (away longer than fill_retry_for, or failing), replaced (another version at the origin now), mismatch (bytes not the origin's version), disk, not_found, abandoned (viewers left before the first byte), preempted (a prefetch stopped for a viewer's fill), cancelled (a prefetch no viewer read, cancelled by the operator's eviction; the storage manager's evictions never stop a fill).", []string{"cause"}, nil)
	descNodeDiskUsed = prometheus.NewDesc("vodnode_disk_used_bytes", "Bytes of the titles held or filling (a filling title counts whole) and of partial fills.", nil, nil)
	descNodePartial  = prometheus.NewDesc("vodnode_partial_bytes", "Bytes of partial fills: titles whose fill stopped short, kept to resume (removed first when a fill needs room).", nil, nil)
	descNodeDiskCap  = prometheus.NewDesc("vodnode_disk_quota_bytes", "The title cache's quota (disk_bytes), bytes.", nil, nil)
	descNodeTitles   = prometheus.NewDesc("vodnode_titles", "Titles held or filling.", nil, nil)
	descNodeFallback = prometheus.NewDesc("vodnode_http_send_fallbacks_total", "HTTP sends of a title's bytes (progressive downloads, HLS segments) copied through the node instead of sent with sendfile, by cause: reopen (the title's file could not be opened again), writer (the response writer takes no file), connection (net/http or the kernel copied the file). HTTPS sends are always copied and not counted.", []string{"cause"}, nil)
	descNodeDiskRead = prometheus.NewDesc("vodnode_disk_read_errors_total", "Reads of a title's file that failed while sending it (an I/O error, or the file shorter than its index), each cutting a viewer's HTTP response short or ending an RTSP session (reason \"disk-read-error\").", nil, nil)
	descNodeDraining = prometheus.NewDesc("vodnode_draining", "1 while the node is drained (refuses new sessions), else 0.", nil, nil)
	descNodeConnRefd = prometheus.NewDesc("vodnode_connections_refused_total", "Connections refused at accept (answered 503, or closed bare on RTSPS and HTTPS) because their client address (an IPv6 client's /64) had max_conns_per_addr open already, by listener (rtsp, rtsps, http).", []string{"listener"}, nil)
	descNodeRdrStops = prometheus.NewDesc("vodnode_rtsp_reader_stops_total", "Times an RTSP stream over TCP held back 5 s (max lag) found its player had stopped reading, its host alive (paused without a PAUSE: mpv), and waited at its position rather than ending as a slow client: once per stop.", nil, nil)
	descNodeUDPRefd  = prometheus.NewDesc("vodnode_setups_udp_refused_total", "RTSP SETUPs that offered only UDP, answered 461 Unsupported Transport by this node, which has tcp_only (players then set up over TCP): how many players asked for UDP first.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descNodeSessions, descNodeReserved, descNodeCapacity, descNodeSent, descNodeOrigin, descNodeOriginRg,
		descNodeFillsNow, descNodeFills, descNodeFailed, descNodeDiskUsed, descNodePartial, descNodeDiskCap, descNodeTitles, descNodeDraining,
		descNodeFallback, descNodeDiskRead, descNodeUDPRefd, descNodeConnRefd, descNodeRdrStops} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c nodeCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.n
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	n.mu.Lock()
	rtsp, rtsps, http, reserved := 0, 0, 0, n.reserved
	for _, s := range n.sessions {
		if s.rtsps {
			rtsps++
		} else {
			rtsp++
		}
	}
	for _, hs := range n.httpSessions {
		if hs.t() != nil {
			http++
		}
	}
	n.mu.Unlock()
	gauge(descNodeSessions, float64(rtsp), "rtsp")
	gauge(descNodeSessions, float64(rtsps), "rtsps")
	gauge(descNodeSessions, float64(http), "http")
	gauge(descNodeReserved, float64(reserved))
	gauge(descNodeCapacity, float64(n.Capacity.EgressBps))
	counter(descNodeSent, float64(n.bytesSent()))
	counter(descNodeOrigin, float64(n.store.OriginBytes()))
	counter(descNodeOriginRg, float64(n.store.OriginRangeBytes()))
	gauge(descNodeFillsNow, float64(n.store.ActiveFills()))
	started := 0
	for _, k := range n.store.Fills() {
		started += k
	}
	counter(descNodeFills, float64(started))
	failed := n.store.FillsFailed()
	for _, cause := range []string{"origin", "replaced", "mismatch", "disk", "not_found", "abandoned", "preempted", "cancelled"} {
		ch <- prometheus.MustNewConstMetric(descNodeFailed, prometheus.CounterValue, float64(failed[cause]), cause)
	}
	fallbacks := n.sendFallbacks()
	for _, cause := range fallbackCauses {
		ch <- prometheus.MustNewConstMetric(descNodeFallback, prometheus.CounterValue, float64(fallbacks[cause]), cause)
	}
	counter(descNodeDiskRead, float64(n.send.diskErrors.Load()))
	counter(descNodeUDPRefd, float64(n.udpRefused.Load()))
	counter(descNodeRdrStops, float64(n.engine.ReaderStops()))
	for listener, c := range map[string]*atomic.Uint64{"rtsp": &n.connsRefused.rtsp, "rtsps": &n.connsRefused.rtsps, "http": &n.connsRefused.http} {
		ch <- prometheus.MustNewConstMetric(descNodeConnRefd, prometheus.CounterValue, float64(c.Load()), listener)
	}
	used, partial, quota := n.store.Usage()
	gauge(descNodeDiskUsed, float64(used))
	gauge(descNodePartial, float64(partial))
	gauge(descNodeDiskCap, float64(quota))
	gauge(descNodeTitles, float64(len(n.store.Titles())))
	draining := 0.0
	if n.draining.Load() {
		draining = 1
	}
	gauge(descNodeDraining, draining)
}

// startMetrics serves /metrics on MetricsListen, when set.
func (n *Node) startMetrics() error {
	if n.MetricsListen == "" {
		return nil
	}
	srv, err := metricshttp.Serve(n.MetricsListen, nodeCollector{n})
	if err != nil {
		return err
	}
	n.metrics = srv
	return nil
}

// MetricsAddr returns the /metrics endpoint's address, "" without one.
func (n *Node) MetricsAddr() string {
	if n.metrics == nil {
		return ""
	}
	return n.metrics.Addr()
}
