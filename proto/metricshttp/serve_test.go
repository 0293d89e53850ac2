package metricshttp

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Serve answers /metrics with the given collectors and the runtime's, 404
// elsewhere, and gives idle connections a deadline.
func TestServe(t *testing.T) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "test_gauge", Help: "a gauge"})
	g.Set(42)
	s, err := Serve("127.0.0.1:0", g)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{"test_gauge 42", "go_goroutines ", "process_open_fds ",
		`vodcluster_tls_reloads_total{result="loaded"} 0`, `vodcluster_tls_reloads_total{result="refused"} 0`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if res, err := http.Get("http://" + s.Addr() + "/other"); err != nil || res.StatusCode != http.StatusNotFound {
		t.Fatalf("/other: %v %v", res, err)
	}
	if s.srv.IdleTimeout <= 0 || s.srv.ReadTimeout <= 0 || s.srv.WriteTimeout <= 0 {
		t.Fatalf("timeouts idle %v read %v write %v: an idle connection would be held for ever", s.srv.IdleTimeout, s.srv.ReadTimeout, s.srv.WriteTimeout)
	}
	if _, err := Serve(s.Addr(), g); err == nil {
		t.Fatal("a second endpoint bound the same address")
	}
}

// Several endpoints in one process (vodcluster up: the manager, the
// origin and the nodes, each with its /metrics) each serve the process's
// vodcluster_tls_reloads_total: registering it for each is no error and
// no panic (each endpoint has its own registry).
func TestServeSeveralInOneProcess(t *testing.T) {
	var addrs []string
	for i := 0; i < 3; i++ {
		s, err := Serve("127.0.0.1:0")
		if err != nil {
			t.Fatalf("endpoint %d: %v", i, err)
		}
		defer s.Close()
		addrs = append(addrs, s.Addr())
	}
	for _, a := range addrs {
		res, err := http.Get("http://" + a + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !strings.Contains(string(b), `vodcluster_tls_reloads_total{result="refused"} 0`) {
			t.Errorf("%s/metrics lacks vodcluster_tls_reloads_total:\n%s", a, b)
		}
	}
}
