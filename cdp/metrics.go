package cdp

import (
	"github.com/prometheus/client_golang/prometheus"

	"vodcluster/proto/metricshttp"
)

// originCollector reads the origin's transfer counters at each scrape.
type originCollector struct{ s *Server }

var (
	descTransfers = prometheus.NewDesc("cdp_transfers_total", "Transfers started (Fetch calls that got a channel).", nil, nil)
	descSent      = prometheus.NewDesc("cdp_sent_bytes_total", "Title bytes sent by transfers.", nil, nil)
	descActive    = prometheus.NewDesc("cdp_transfers_active", "Transfers holding a channel now.", nil, nil)
	descWaiting   = prometheus.NewDesc("cdp_transfers_waiting", "Fetch calls queued for a channel now.", nil, nil)
	descAbandoned = prometheus.NewDesc("cdp_transfers_abandoned", "Transfers whose caller left (their channel given back), and stats of a title's file (a fetch's before it queued, GetTitle's) whose call no longer waits for them (its caller left, or it answered UNAVAILABLE after 2 s), that have not returned yet; above 0 for long: stuck in a file operation (a hung disk or network file system).", nil, nil)
	descRefused   = prometheus.NewDesc("cdp_transfers_refused_total", "no_wait Fetch calls refused because every channel was busy.", nil, nil)
	descPreempted = prometheus.NewDesc("cdp_transfers_preempted_total", "Preemptible transfers (a node's reads far ahead of a fill) ended to give their channel to a Fetch that queued for one.", nil, nil)
	descYielded   = prometheus.NewDesc("cdp_transfers_yielded_total", "Prefetches (fills no viewer waits for) ended to give their channel to a fill or a read far ahead of a fill that a viewer waits for.", nil, nil)
	descChannels  = prometheus.NewDesc("cdp_channels", "Concurrent transfers allowed (max_transfers; 0: unlimited).", nil, nil)
	descTitles    = prometheus.NewDesc("cdp_titles", "Titles in the catalog.", nil, nil)
	descReloads   = prometheus.NewDesc("cdp_catalog_reloads_total", "Catalogs read again after start, by result: loaded, or refused (the catalog before kept).", []string{"result"}, nil)
	descStale     = prometheus.NewDesc("cdp_catalog_stale", "1 while the last catalog reload was refused: the titles served are not what the title directory holds.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c originCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTransfers, descSent, descActive, descWaiting, descAbandoned, descRefused, descPreempted, descYielded, descChannels, descTitles, descReloads, descStale} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c originCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	m := func(d *prometheus.Desc, t prometheus.ValueType, v float64) {
		ch <- prometheus.MustNewConstMetric(d, t, v)
	}
	m(descTransfers, prometheus.CounterValue, float64(st.Transfers))
	m(descSent, prometheus.CounterValue, float64(st.BytesSent))
	m(descActive, prometheus.GaugeValue, float64(st.Active))
	m(descWaiting, prometheus.GaugeValue, float64(st.Waiting))
	m(descAbandoned, prometheus.GaugeValue, float64(st.Abandoned))
	m(descRefused, prometheus.CounterValue, float64(st.Refused))
	m(descPreempted, prometheus.CounterValue, float64(st.Preempted))
	m(descYielded, prometheus.CounterValue, float64(st.Yielded))
	m(descChannels, prometheus.GaugeValue, float64(c.s.MaxTransfers))
	ch <- prometheus.MustNewConstMetric(descReloads, prometheus.CounterValue, float64(st.CatalogReloads), "loaded")
	ch <- prometheus.MustNewConstMetric(descReloads, prometheus.CounterValue, float64(st.CatalogRefused), "refused")
	stale := 0.0
	if st.CatalogStale {
		stale = 1
	}
	m(descStale, prometheus.GaugeValue, stale)
	titles := 0
	if cat := c.s.Catalog(); cat != nil {
		titles = cat.Len()
	}
	m(descTitles, prometheus.GaugeValue, float64(titles))
}

// MetricsAddr returns the /metrics endpoint's address, "" without one.
func (s *Server) MetricsAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.metrics == nil {
		return ""
	}
	return s.metrics.Addr()
}

// startMetrics serves /metrics on MetricsListen, when set (s.mu held).
func (s *Server) startMetrics() error {
	if s.MetricsListen == "" {
		return nil
	}
	srv, err := metricshttp.Serve(s.MetricsListen, originCollector{s})
	if err != nil {
		return err
	}
	s.metrics = srv
	return nil
}
