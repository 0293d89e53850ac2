package acm

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

func TestSiteTable(t *testing.T) {
	p := netip.MustParsePrefix
	st, err := newSiteTable([]Site{
		{Name: "north", Clients: []netip.Prefix{p("10.0.0.0/8"), p("2001:db8:1::/48")}},
		{Name: "north-lab", Clients: []netip.Prefix{p("10.9.0.0/16")}},
		{Name: "south", Clients: []netip.Prefix{p("192.0.2.0/24")}},
		{Name: "east", Clients: []netip.Prefix{p("::ffff:203.0.113.0/120")}}, // IPv4-mapped: 203.0.113.0/24
	})
	if err != nil {
		t.Fatal(err)
	}
	for ip, want := range map[string]string{
		"10.1.2.3": "north", "10.9.1.1": "north-lab", "::ffff:10.1.2.3": "north", "2001:db8:1::7": "north", "2001:db8:1::7%eth0": "north",
		"192.0.2.44": "south", "198.51.100.1": "", "not an address": "",
		"203.0.113.9": "east", "::ffff:203.0.113.9": "east",
	} {
		if got := st.siteOf(ip); got != want {
			t.Errorf("%s: site %q, want %q", ip, got, want)
		}
	}
	for name, c := range map[string]struct {
		sites []Site
		want  string
	}{
		"twice in one site": {[]Site{{Name: "a", Clients: []netip.Prefix{p("10.0.0.0/8"), p("10.1.0.0/8")}}}, `site "a": prefix 10.0.0.0/8 given twice`},
		"mapped, too wide":  {[]Site{{Name: "a", Clients: []netip.Prefix{p("::ffff:0:0/80")}}}, `site "a": prefix ::ffff:0.0.0.0/80 is wider`},
		"mapped and IPv4":   {[]Site{{Name: "a", Clients: []netip.Prefix{p("10.0.0.0/8")}}, {Name: "b", Clients: []netip.Prefix{p("::ffff:10.0.0.0/104")}}}, `prefix 10.0.0.0/8 is in sites "a" and "b"`},
	} {
		if _, err := newSiteTable(c.sites); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	for name, sites := range map[string][]Site{
		"no name":        {{Clients: []netip.Prefix{p("10.0.0.0/8")}}},
		"no prefix":      {{Name: "a"}},
		"twice":          {{Name: "a", Clients: []netip.Prefix{p("10.0.0.0/8")}}, {Name: "a", Clients: []netip.Prefix{p("11.0.0.0/8")}}},
		"shared prefix":  {{Name: "a", Clients: []netip.Prefix{p("10.0.0.0/8")}}, {Name: "b", Clients: []netip.Prefix{p("10.1.0.0/8")}}},
		"invalid prefix": {{Name: "a", Clients: []netip.Prefix{{}}}},
	} {
		if _, err := newSiteTable(sites); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestViewersStayInTheirSite: with the loopback clients in site "north",
// viewers go to north's node even when the south's is idle and holds the
// title; once north's node is full they are served from the south
// (overflow), or, with SiteOnly, refused 453.
func TestViewersStayInTheirSite(t *testing.T) {
	for _, only := range []bool{false, true} {
		records := filepath.Join(t.TempDir(), "sessions.jsonl")
		e := newManager(t, "", func(m *Manager) {
			m.Sites = []Site{{Name: "north", Clients: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}}
			m.SiteOnly = only
			m.QueueDeadline = 1
			m.SessionRecordsFile = records
		})
		counted := func(client, node string) float64 {
			var d dto.Metric
			if err := siteAdmissions.WithLabelValues(client, node).Write(&d); err != nil {
				t.Fatal(err)
			}
			return d.GetCounter().GetValue()
		}
		inSite, across := counted("north", "north"), counted("north", "south")
		e.startNode("north-1", nodeOpts{rtsp: "127.0.0.1:7001", egress: 2 * titleBps, site: "north"})
		e.startNode("south-1", nodeOpts{rtsp: "127.0.0.1:7002", site: "south", titles: []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}})
		for _, title := range []string{"t1", "t2"} {
			res := e.describe("demo", "demo", title)
			if res.StatusCode != base.StatusFound || !strings.Contains(res.Header["Location"][0], "127.0.0.1:7001") {
				t.Fatalf("only=%v %s: %d %v, want north-1 (7001)", only, title, res.StatusCode, res.Header["Location"])
			}
		}
		res := e.describe("demo", "demo", "t3") // north-1 is full
		switch {
		case only && res.StatusCode != base.StatusNotEnoughBandwidth:
			t.Fatalf("site only, the site full: %d, want 453", res.StatusCode)
		case !only && (res.StatusCode != base.StatusFound || !strings.Contains(res.Header["Location"][0], "127.0.0.1:7002")):
			t.Fatalf("the site full: %d %v, want south-1 (7002)", res.StatusCode, res.Header["Location"])
		}
		wantAcross := 1.0
		if only {
			wantAcross = 0
		}
		if d, a := counted("north", "north")-inSite, counted("north", "south")-across; d != 2 || a != wantAcross {
			t.Errorf("only=%v: vodcluster_site_admissions_total north/north +%v, north/south +%v; want +2, +%v", only, d, a, wantAcross)
		}
		if got := nodeInfo(t, e.m); got != "north-1=north,tcp_only=false south-1=south,tcp_only=false" {
			t.Errorf("vodcluster_node_info: %q", got)
		}
		nodes, err := e.admin.ListNodes(context.Background(), &pb.ListNodesRequest{})
		if err != nil || nodes.GetNodes()[0].GetSite() != "north" || nodes.GetNodes()[1].GetSite() != "south" {
			t.Fatalf("ListNodes sites: %v %v", nodes, err)
		}
		// The session records say which site each was served from.
		if _, err := e.admin.EndSessions(context.Background(), &pb.EndSessionsRequest{User: "demo"}); err != nil {
			t.Fatal(err)
		}
		e.m.mu.Lock()
		e.m.flushHeldRecordsLocked(time.Now(), true)
		e.m.mu.Unlock()
		want := map[string]int{"north/north": 2}
		if !only {
			want["north/south"] = 1
		}
		total := 0
		for _, k := range want {
			total += k
		}
		waitFor(t, 5*time.Second, "the records", func() bool { return len(readRecords(t, records)) == total })
		got := map[string]int{}
		for _, r := range readRecords(t, records) {
			got[r.ClientSite+"/"+r.NodeSite]++
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("only=%v: records by client/node site %v, want %v", only, got, want)
		}
	}
}

// The operator's log says which site a viewer is kept to when site_only
// refuses it (it said no node had headroom, with the other site idle),
// or that none of its site's nodes is in service (drained), a
// node's site at registration, a warning for a site none of
// manager.sites names, and the sites of an admission.
func TestSiteLogs(t *testing.T) {
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		m.Sites = []Site{
			{Name: "north", Clients: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
			{Name: "south", Clients: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}},
		}
		m.SiteOnly = true
		m.QueueDeadline = 1
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	e.startNode("north-1", nodeOpts{rtsp: "127.0.0.1:7001", egress: titleBps, site: "north"})
	e.startNode("south-1", nodeOpts{rtsp: "127.0.0.1:7002", site: "south"})
	e.startNode("west-1", nodeOpts{rtsp: "127.0.0.1:7003", site: "wets"})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("t1: %d, want 302", res.StatusCode)
	}
	if res := e.describe("demo", "demo", "t2"); res.StatusCode != base.StatusNotEnoughBandwidth {
		t.Fatalf("t2 with the north full: %d, want 453", res.StatusCode)
	}
	if _, err := e.admin.SetNode(context.Background(), &pb.SetNodeRequest{NodeId: "north-1", Draining: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if res := e.describe("demo", "demo", "t3"); res.StatusCode != base.StatusNotEnoughBandwidth {
		t.Fatalf("t3 with the north drained: %d, want 453", res.StatusCode)
	}
	out := log.String()
	for _, want := range []string{
		`msg="node registered" node=north-1`, `site=north`,
		`level=WARN msg="node's site is none of the manager's sites`, `node=west-1 site=wets sites="[north south]"`,
		`msg=admitted`, `site=north node_site=north`,
		`no node of the viewer's site \"north\" (site_only) has headroom`,
		`no node of the viewer's site \"north\" (site_only) is in service`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s:\n%s", want, out)
		}
	}
}

// nodeInfo returns the vodcluster_node_info series of m's collector as
// "node=site,tcp_only=bool ...", sorted.
func nodeInfo(t *testing.T, m *Manager) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := reg.Register(metricsCollector{m}); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fams {
		if f.GetName() != "vodcluster_node_info" {
			continue
		}
		for _, mt := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range mt.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			out = append(out, l["node"]+"="+l["site"]+",tcp_only="+l["tcp_only"])
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// With the origin down a viewer kept to its site (site_only) whose site
// has no copy of the title is refused at once (503 with Retry-After, as
// when no node at all holds it) even though another site holds one: it
// waited the queue deadline for a fill that could not start. Without
// site_only the other site's copy serves it.
func TestOriginDownSiteOnlyRefusesAtOnce(t *testing.T) {
	for _, only := range []bool{false, true} {
		e := newManager(t, "", func(m *Manager) {
			m.Sites = []Site{{Name: "north", Clients: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}}
			m.SiteOnly = only
			m.QueueDeadline = time.Minute // a wait would outlast the test's deadline
			m.OriginCheck = 50 * time.Millisecond
		})
		e.startNode("north-1", nodeOpts{rtsp: "127.0.0.1:7001", site: "north"})
		e.startNode("south-1", nodeOpts{rtsp: "127.0.0.1:7002", site: "south", titles: []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}})
		e.origin.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
		waitFor(t, 5*time.Second, "the origin seen down", func() bool { return e.m.originDown.Load() })
		res := e.describe("demo", "demo", "t1")
		switch {
		case only && (res.StatusCode != base.StatusServiceUnavailable || len(res.Header["Retry-After"]) != 1):
			t.Fatalf("site only, origin down, the title only in the other site: %d %v, want 503 with Retry-After", res.StatusCode, res.Header)
		case !only && (res.StatusCode != base.StatusFound || !strings.Contains(res.Header["Location"][0], "127.0.0.1:7002")):
			t.Fatalf("origin down, the title only in the other site: %d %v, want south-1 (7002)", res.StatusCode, res.Header["Location"])
		}
	}
}
