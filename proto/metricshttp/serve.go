package metricshttp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"vodcluster/proto/grpctls"
)

// Server is a running /metrics endpoint.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Serve listens on addr (host:port; port 0 picks a free one) and serves
// the collectors cs, with the Go runtime and process collectors and the
// process's TLS certificate reloads (vodcluster_tls_reloads_total{result}:
// loaded, refused; grpctls.Reloads), at /metrics; any other path is 404. A collector's error is reported in the
// scrape, the others' metrics still served. Errors: addr cannot be bound,
// or two collectors describe the same metric.
func Serve(addr string, cs ...prometheus.Collector) (*Server, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, err
	}
	for _, c := range tlsReloads() {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metricshttp: %w", err)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metricshttp: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	// Deadlines on every phase: a scraper reuses one connection every
	// scrape interval; an idle or slow one is closed (each holds a
	// goroutine and a file descriptor).
	s := &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener closed under it: Close follows
		}
	}()
	return s, nil
}

// Addr returns the address the endpoint listens on, host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the endpoint, letting scrapes in progress finish for up to
// 2 s.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// tlsReloads are the counters of grpctls.Reloads: renewed server
// certificates taken, and changes of their files that did not load.
func tlsReloads() []prometheus.Collector {
	const name, help = "vodcluster_tls_reloads_total", "Renewed TLS server certificates taken (result=loaded) and changes of their files that did not load (result=refused: the previous certificate is still served, a restart would fail)."
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: prometheus.Labels{"result": "loaded"}},
			func() float64 { l, _ := grpctls.Reloads(); return float64(l) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: prometheus.Labels{"result": "refused"}},
			func() float64 { _, r := grpctls.Reloads(); return float64(r) }),
	}
}
