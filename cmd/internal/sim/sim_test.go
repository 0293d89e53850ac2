package sim

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"vodcluster/smm/boundcheck"
)

// small is a quick scenario: 20,000 subscribers, 500 titles, 6 nodes.
func small() Config {
	c := Default()
	c.Demand.Subscribers = 20_000
	c.Demand.Titles = 500
	c.Demand.NewTitlesPerDay = 5
	c.Demand.NewTitleTopRank = 20
	if err := c.SetNodes(6); err != nil {
		panic(err)
	}
	for i := range c.Cluster.Nodes {
		c.Cluster.Nodes[i].EgressBps /= 2
	}
	c.CDP.Channels = 12
	return c
}

func TestDefaultDemandIsTheIssuesOperator(t *testing.T) {
	c := Default()
	nodes := 0
	for _, k := range c.Cluster.Nodes {
		nodes += k.Count
	}
	if c.Demand.Subscribers != 200_000 || c.Demand.Titles != 5_000 || nodes != 20 || c.Cluster.DiskShare > 0.5 {
		t.Fatalf("default: %d subscribers, %d titles, %d nodes, disk share %v", c.Demand.Subscribers, c.Demand.Titles, nodes, c.Cluster.DiskShare)
	}
	d := generate(&c, nodes)
	e, err := newEngine(&c, d, "lall")
	if err != nil {
		t.Fatal(err)
	}
	var disk int64
	for _, n := range e.nodes {
		disk += n.spec.Capacity.DiskBytes
	}
	if float64(disk) > 0.5*float64(d.initialBytes)+1 {
		t.Fatalf("disks %d bytes hold more than half of the catalog's %d", disk, d.initialBytes)
	}
	// The evening peak: more arrivals between 20:00 and 23:00 than in any
	// other three hours of the morning.
	var evening, morning int
	for _, r := range d.reqs {
		h := int(r.t / 3600)
		if h >= 20 && h < 23 {
			evening++
		}
		if h >= 3 && h < 6 {
			morning++
		}
	}
	if evening < 5*morning {
		t.Fatalf("evening %d vs early morning %d arrivals", evening, morning)
	}
}

func TestRunInvariantsEveryPolicy(t *testing.T) {
	rs, err := Run(small())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.QoSViolations != 0 || r.Inconsistencies != 0 || r.UnbalancedReleases != 0 || r.OverCapacity != 0 {
			t.Fatalf("%s: %d QoS violations, %d inconsistencies, lsm anomalies %d/%d", r.Policy, r.QoSViolations, r.Inconsistencies,
				r.UnbalancedReleases, r.OverCapacity)
		}
		if r.Requested == 0 || r.Admitted+r.Refused != r.Requested || r.RefusedNoCopy > r.Refused {
			t.Fatalf("%s: requested %d admitted %d refused %d (no copy %d)", r.Policy, r.Requested, r.Admitted, r.Refused, r.RefusedNoCopy)
		}
		if r.OriginFetches == 0 || r.OriginBytes == 0 || r.PeakCDPTransfers > 12 {
			t.Fatalf("%s: origin %d fetches %d bytes, peak %d transfers (12 channels)", r.Policy, r.OriginFetches, r.OriginBytes, r.PeakCDPTransfers)
		}
		if !(r.PeakToMean >= 1) || r.DecisionP50Ns <= 0 || r.DecisionP99Ns < r.DecisionP50Ns {
			t.Fatalf("%s: peak/mean %v, decisions %d/%d ns", r.Policy, r.PeakToMean, r.DecisionP50Ns, r.DecisionP99Ns)
		}
		checkTrace(t, r)
	}
}

func TestSameSeedSameRun(t *testing.T) {
	c := small()
	c.Policies = []string{"lall", "twos", "lblcr"}
	c.StoragePolicies = []string{"gdsf", "w-tinylfu"}
	a, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Run(c)
	for i := range a {
		x, y := a[i], b[i]
		x.WallSeconds, y.WallSeconds = 0, 0
		x.DecisionP50Ns, y.DecisionP50Ns, x.DecisionP99Ns, y.DecisionP99Ns = 0, 0, 0, 0
		x.Loads, y.Loads = nil, nil
		xt, yt := x.Trace, y.Trace
		x.Trace, y.Trace = nil, nil
		xj, _ := json.Marshal(x)
		yj, _ := json.Marshal(y)
		if !bytes.Equal(xj, yj) {
			t.Fatalf("%s differs:\n%+v\n%+v", x.Policy, x, y)
		}
		for k := range xt {
			if xt[k] != yt[k] {
				t.Fatalf("%s: trace differs at %d", x.Policy, k)
			}
		}
	}
	c.Seed = 2
	d, _ := Run(c)
	if d[0].Requested == a[0].Requested && d[0].OriginBytes == a[0].OriginBytes {
		t.Fatal("another seed gave the same run")
	}
}

// A node fails mid-day and returns: its viewers are cut off and resume
// elsewhere, it gets nothing while down, and it ramps (slow start) when
// it returns: over the whole window its load stays under the ramp's cap,
// 10% of its egress at the return growing linearly to all of it; lall,
// which sends new sessions to the least loaded node, runs into the cap
// in the first half of the window (without the ramp the idle node would
// take a stampede).
func TestNodeFailureMidDay(t *testing.T) {
	c := small()
	c.Failures.PerDay = 0
	c.Policies = []string{"lall", "rr", "lblc"}
	window := time.Hour
	c.Scheduler.SlowStart = &window
	c.SampleInterval = 30 * time.Second
	nodes := 6
	d := generate(&c, nodes)
	back := 21 * 3600.0
	d.outages = []outage{{node: 2, down: 20 * 3600, up: back}}
	for _, p := range c.Policies {
		e, err := newEngine(&c, d, p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := e.run()
		if err != nil {
			t.Fatal(err)
		}
		if r.Interrupted == 0 || r.Resumed == 0 || r.Resumed > r.Interrupted {
			t.Fatalf("%s: interrupted %d resumed %d", p, r.Interrupted, r.Resumed)
		}
		if r.QoSViolations != 0 || r.Inconsistencies != 0 {
			t.Fatalf("%s: %d QoS violations, %d inconsistencies", p, r.QoSViolations, r.Inconsistencies)
		}
		s := r.Loads
		var inWindow, late int
		closest := math.Inf(1) // least distance to the cap in the first half of the window
		for k, ts := range s.Times {
			u := float64(s.Util[2][k])
			switch {
			case ts > 20*3600 && ts < back:
				if !math.IsNaN(u) {
					t.Fatalf("%s: node 3 has load %v while down at %vs", p, u, ts)
				}
			case ts >= back && ts < back+window.Seconds():
				inWindow++
				ramp := 0.1 + 0.9*(ts-back)/window.Seconds()
				if u > ramp+1e-9 {
					t.Fatalf("%s: node 3 at %.3f, %.0f s after its return: above the ramp's %.3f", p, u, ts-back, ramp)
				}
				if ts > back && ts < back+window.Seconds()/2 {
					closest = math.Min(closest, ramp-u)
				}
			case ts >= back+window.Seconds() && ts < back+2*window.Seconds():
				late++
			}
		}
		if inWindow < 50 || late == 0 {
			t.Fatalf("%s: %d samples in the ramp window", p, inWindow)
		}
		if p == "lall" && closest > 0.1 {
			t.Fatalf("%s: node 3 never within 0.1 of its ramp's cap in the first half (%.3f)", p, closest)
		}
		var after float64
		for k, ts := range s.Times {
			if ts > back+window.Seconds() && ts < back+2*window.Seconds() {
				after = math.Max(after, float64(s.Util[2][k]))
			}
		}
		if after == 0 {
			t.Fatalf("%s: node 3 got no sessions after its return", p)
		}
	}
}

// The issue's bar on the default demand: lall uses less origin bytes
// than rr, wlc and lblc at no higher refusal count, with peak-to-mean at
// most 1.15 and no QoS violation.
func TestLallBeatsIPVSOnTheDefaultDemand(t *testing.T) {
	if testing.Short() {
		t.Skip("a simulated day of the default cluster")
	}
	c := Default()
	c.Policies = []string{"lall", "rr", "wlc", "lblc"}
	rs, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	lall := rs[0]
	for _, r := range rs[1:] {
		if lall.OriginBytes >= r.OriginBytes {
			t.Errorf("lall %d origin bytes >= %s %d", lall.OriginBytes, r.Policy, r.OriginBytes)
		}
		if lall.Refused > r.Refused {
			t.Errorf("lall refused %d > %s %d", lall.Refused, r.Policy, r.Refused)
		}
	}
	if lall.PeakToMean > 1.15 || lall.QoSViolations != 0 {
		t.Errorf("lall peak/mean %.3f", lall.PeakToMean)
	}
}

func TestConfigFileStrictAndValidated(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("seed: 7\ndemand:\n  titles: 300\ncdp:\n  setup_delay: 5s\n"), 0o644)
	c := Default()
	if err := c.LoadFile(good); err != nil {
		t.Fatal(err)
	}
	if c.Seed != 7 || c.Demand.Titles != 300 || c.CDP.SetupDelay != 5*time.Second || c.Demand.Subscribers != 200_000 {
		t.Fatalf("overlay: %+v", c)
	}
	for name, body := range map[string]string{
		"unknown":  "demand:\n  titels: 3\n",
		"range":    "demand:\n  zipf_alpha: -1\n",
		"hourly":   "demand:\n  hourly: [1, 2]\n",
		"policy":   "policies: [nope]\n",
		"storage":  "storage_policy: nope\n",
		"storages": "storage_policies: [gdsf, nope]\n",
		"warmup":   "days: 2\nwarmup_days: 2\n",
		"cdp":      "cdp:\n  channels: 0\n",
		"setup":    "cdp:\n  setup_delay: 1000h\n",
		"weight":   "cluster:\n  nodes: [{count: 2, egress_bps: 1000000000, disk_weight: 1, weight: 65536}]\n", // above IPVS's 65535
		"syntax":   "demand: [\n",
	} {
		p := filepath.Join(dir, name+".yaml")
		os.WriteFile(p, []byte(body), 0o644)
		c := Default()
		if err := c.LoadFile(p); err == nil {
			t.Fatalf("%s: accepted %q", name, body)
		}
	}
	if c := Default(); c.SetNodes(0) == nil {
		t.Fatal("0 nodes accepted")
	}
}

func TestCommandJSONPlotAndTrace(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfgFile, []byte("demand:\n  subscribers: 5000\n  titles: 200\n"), 0o644)
	svg, trace := filepath.Join(dir, "l.svg"), filepath.Join(dir, "t.csv")
	cmd := NewCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--config", cfgFile, "--nodes", "4", "--policies", "lall,rr", "--json", "--plot", svg, "--trace-out", trace})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var rs []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil || len(rs) != 2 {
		t.Fatalf("json: %v %s", err, out.String())
	}
	for _, k := range []string{"policy", "requested", "admitted", "refused", "qos_violations", "peak_to_mean", "origin_fetches", "origin_bytes", "decision_p50_ns", "decision_p99_ns", "storage_policy", "refused_no_copy", "peak_cdp_transfers", "placement_moves",
		"origin_bytes_ratio_to_bound", "bound_origin_bytes", "bound_instant_origin_bytes", "disk_bytes"} {
		if _, ok := rs[0][k]; !ok {
			t.Fatalf("json lacks %s", k)
		}
	}
	b, _ := os.ReadFile(svg)
	if !bytes.HasPrefix(b, []byte("<svg")) || bytes.Count(b, []byte("<path")) != 4 {
		t.Fatalf("svg: %.200s", b)
	}
	f, _ := os.Open(trace)
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(recs) < 2 || strings.Join(recs[0], ",") != "time_s,title,bytes,node,fill,end_s" {
		t.Fatalf("trace: %v %v", err, recs[:1])
	}
	if int(rs[0]["requested"].(float64)+rs[0]["resumed"].(float64)) != len(recs)-1 {
		t.Fatalf("trace has %d records for %v requests and %v resumed playbacks", len(recs)-1, rs[0]["requested"], rs[0]["resumed"])
	}
	// The trace reproduces the run's bounds through `vodcluster bound`.
	disk := int64(rs[0]["disk_bytes"].(float64))
	bc := boundcheck.NewCommand()
	var bout bytes.Buffer
	bc.SetOut(&bout)
	bc.SetArgs([]string{"--capacity", strconv.FormatInt(disk, 10), "--json", "--policies", "lru", trace})
	if err := bc.Execute(); err != nil {
		t.Fatal(err)
	}
	var chk boundcheck.Result
	if err := json.Unmarshal(bout.Bytes(), &chk); err != nil {
		t.Fatal(err)
	}
	if !chk.Residency || chk.Bound.OriginBytes != int64(rs[0]["bound_origin_bytes"].(float64)) ||
		chk.Instant.OriginBytes != int64(rs[0]["bound_instant_origin_bytes"].(float64)) {
		t.Fatalf("bound from the trace %d (instant %d), run says %v (%v)", chk.Bound.OriginBytes, chk.Instant.OriginBytes,
			rs[0]["bound_origin_bytes"], rs[0]["bound_instant_origin_bytes"])
	}

	cmd = NewCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--policy", "nope"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "unknown policy") {
		t.Fatalf("unknown policy: %v", err)
	}
}

// checkTrace asserts that the trace has a row for every request and for
// every resumed playback, and that resumed rows are played ones.
func checkTrace(t *testing.T, r Result) {
	t.Helper()
	var resumed int64
	for _, tr := range r.Trace {
		if tr.Resumed {
			resumed++
			if tr.Node < 0 || tr.End < tr.T {
				t.Fatalf("%s/%s: resumed row %+v", r.StoragePolicy, r.Policy, tr)
			}
		}
	}
	if int64(len(r.Trace)) != r.Requested+r.Resumed || resumed != r.Resumed {
		t.Fatalf("%s/%s: %d trace records (%d resumed) for %d requests and %d resumed playbacks",
			r.StoragePolicy, r.Policy, len(r.Trace), resumed, r.Requested, r.Resumed)
	}
}

// BenchmarkSimDay measures a simulated day of the default cluster under
// the default policy (one op = one day).
func BenchmarkSimDay(b *testing.B) {
	c := Default()
	c.Policies = []string{"lall"}
	for i := 0; i < b.N; i++ {
		if _, err := Run(c); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEveryRequestDecidedAtTheEnd: a request still in the admission queue
// when the simulated day ends is refused at its deadline, not left out of
// the figures. One title larger than every disk, so no node can take it and
// each viewer waits the whole queue wait (an hour): those of the last hour
// are decided after the end.
func TestEveryRequestDecidedAtTheEnd(t *testing.T) {
	c := small()
	c.Demand.Titles, c.Demand.NewTitlesPerDay, c.Demand.Subscribers = 1, 0, 2000
	c.Scheduler.QueueWait = time.Hour
	c.Failures.PerDay = 0
	c.Policies = []string{"lall"}
	rs, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	if r.Requested < 100 || r.Admitted != 0 || r.Refused != r.Requested {
		t.Fatalf("requested %d admitted %d refused %d: every request refused", r.Requested, r.Admitted, r.Refused)
	}
	checkTrace(t, r)
}
