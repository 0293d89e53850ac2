package main

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	v1 "vodcluster/proto/vodcluster/v1"
)

// operatorAdmin answers as a manager with one title, one node, two
// live sessions ("live-1", "live-2"), and records the SetNode requests.
type operatorAdmin struct {
	v1.UnimplementedAdminServer
	mu   sync.Mutex
	sets []*v1.SetNodeRequest
}

func (*operatorAdmin) ListTitles(context.Context, *v1.ListTitlesRequest) (*v1.ListTitlesResponse, error) {
	return &v1.ListTitlesResponse{Titles: []*v1.Title{{Id: "sample-001", Name: "Sample", Package: "basic", DurationS: 20.3,
		BitrateBps: 600_000, SizeBytes: 1_523_176, Version: "0123"}}}, nil
}

func (*operatorAdmin) ListNodes(context.Context, *v1.ListNodesRequest) (*v1.ListNodesResponse, error) {
	return &v1.ListNodesResponse{Nodes: []*v1.NodeInfo{{NodeId: "n1", RtspAddr: "127.0.0.1:1", Alive: true, Weight: 100,
		ReservedBps: 600_000, Capacity: &v1.NodeCapacity{EgressBps: 100_000_000, DiskBytes: 16_000_000}, DiskFreeBytes: 9_007_199_254_740_993}}}, nil
}

func (*operatorAdmin) EndSessions(_ context.Context, r *v1.EndSessionsRequest) (*v1.EndSessionsResponse, error) {
	// As the manager: the live ones among those named, NOT_FOUND when none.
	var ended []string
	for _, id := range r.SessionIds {
		if id == "live-1" || id == "live-2" {
			ended = append(ended, id)
		}
	}
	if len(ended) == 0 {
		return nil, status.Error(codes.NotFound, "none of the sessions is live (ended, or never admitted)")
	}
	return &v1.EndSessionsResponse{SessionIds: ended}, nil
}

func (a *operatorAdmin) SetNode(_ context.Context, r *v1.SetNodeRequest) (*v1.NodeInfo, error) {
	a.mu.Lock()
	a.sets = append(a.sets, r)
	a.mu.Unlock()
	return &v1.NodeInfo{NodeId: r.NodeId, RtspAddr: "127.0.0.1:1", Alive: true, Weight: 100, Overload: r.GetOverload()}, nil
}

// vodctl --json prints 64-bit integers as JSON numbers, as vodctl play
// --json does (protojson quoted them: "sizeBytes": "1523176", which jq
// adds and compares as strings), with every digit (2^53+1 too), keys in
// lowerCamelCase, and no nextPageToken for the catalog read whole.
func TestJSONIntegersAreNumbers(t *testing.T) {
	run := vodctlAgainst(t, &operatorAdmin{})
	out, err := run("--json", "titles")
	if err != nil {
		t.Fatal(err)
	}
	var titles struct {
		Titles []struct {
			SizeBytes  json.RawMessage `json:"sizeBytes"`
			BitrateBps json.RawMessage `json:"bitrateBps"`
			Version    json.RawMessage `json:"version"`
		} `json:"titles"`
	}
	if err := json.Unmarshal([]byte(out), &titles); err != nil || len(titles.Titles) != 1 {
		t.Fatalf("titles --json: %v\n%s", err, out)
	}
	if tt := titles.Titles[0]; string(tt.SizeBytes) != "1523176" || string(tt.BitrateBps) != "600000" || string(tt.Version) != `"0123"` {
		t.Fatalf("titles --json: sizeBytes %s, bitrateBps %s, version %s (a string stays one)\n%s", tt.SizeBytes, tt.BitrateBps, tt.Version, out)
	}
	if strings.Contains(out, "nextPageToken") {
		t.Fatalf("titles --json shows the paging token of a catalog read whole:\n%s", out)
	}
	out, err = run("--json", "nodes")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"reservedBps": 600000`, `"egressBps": 100000000`, `"diskFreeBytes": 9007199254740993`, `"partialBytes": 0`} {
		if !strings.Contains(out, want) {
			t.Errorf("nodes --json lacks %s:\n%s", want, out)
		}
	}
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("nodes --json: %v\n%s", err, out)
	}
	camel := regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if !camel.MatchString(k) {
					t.Errorf("key %q is not lowerCamelCase", k)
				}
				if s, ok := e.(string); ok && regexp.MustCompile(`^-?[0-9]+$`).MatchString(s) && k != "nodeId" {
					t.Errorf("%s: %q, a quoted number", k, s)
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
}

// vodctl sessions end A B, where only A was live, ends A and says B was
// not ended, with exit status 1: it said "ended 1 session(s)" alone, exit
// status 0. All live, it succeeds; none live is the manager's NOT_FOUND.
func TestEndSessionsSaysWhatWasNotEnded(t *testing.T) {
	run := vodctlAgainst(t, &operatorAdmin{})
	out, err := run("sessions", "end", "live-1", "gone-9")
	if err == nil || !strings.Contains(err.Error(), "not ended, not live") || !strings.HasSuffix(err.Error(), ": gone-9") ||
		!strings.Contains(out, "ended 1 session:\nlive-1\n") {
		t.Fatalf("end live-1 gone-9: %v\n%s", err, out)
	}
	out, err = run("--json", "sessions", "end", "gone-9", "live-2", "gone-8")
	var r struct {
		SessionIds []string `json:"sessionIds"`
	}
	if err == nil || !strings.HasSuffix(err.Error(), ": gone-9 gone-8") || json.Unmarshal([]byte(out), &r) != nil ||
		!slices.Equal(r.SessionIds, []string{"live-2"}) {
		t.Fatalf("--json end gone-9 live-2 gone-8: %v\n%s", err, out)
	}
	if out, err := run("sessions", "end", "live-1", "live-2"); err != nil || !strings.Contains(out, "ended 2 sessions") {
		t.Fatalf("end live-1 live-2: %v\n%s", err, out)
	}
	if _, err := run("sessions", "end", "gone-9"); status.Code(err) != codes.NotFound {
		t.Fatalf("end gone-9: %v", err)
	}
}

// --overload -0 is sent as 0 (the scheduler's default), not -0, which
// the answer showed as "overload -0.00"; --help shows no default weight
// (it said "(default 100)", while a weight left out is left as it is).
func TestNodeOverloadNegativeZero(t *testing.T) {
	a := &operatorAdmin{}
	run := vodctlAgainst(t, a)
	out, err := run("node", "n1", "--overload", "-0")
	if err != nil || strings.Contains(out, "-0.00") || !strings.Contains(out, "overload default") {
		t.Fatalf("node n1 --overload -0: %v\n%s", err, out)
	}
	a.mu.Lock()
	sets := slices.Clone(a.sets)
	a.mu.Unlock()
	if len(sets) != 1 || sets[0].Overload == nil || *sets[0].Overload != 0 || math.Signbit(*sets[0].Overload) || sets[0].Weight != nil {
		t.Fatalf("SetNode requests %v", sets)
	}
	help, err := run("node", "--help")
	if err != nil || strings.Contains(help, "(default 100)") || !strings.Contains(help, "left as it is when not given") {
		t.Fatalf("node --help: %v\n%s", err, help)
	}
}

// A --manager host that does not resolve is named as such: gRPC said
// only "name resolver error: produced zero addresses".
func TestExplainUnresolvedHost(t *testing.T) {
	g := &globals{manager: "vod-manger.example.net:9090"}
	err := g.explain(status.Error(codes.Unavailable, "name resolver error: produced zero addresses"))
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), `the host "vod-manger.example.net" of --manager vod-manger.example.net:9090 does not resolve`) {
		t.Fatalf("explain: %v", err)
	}
	var se statusError
	if !errors.As(err, &se) {
		t.Fatalf("explain lost the status: %T", err)
	}
}

// $VODCTL_TLS is read as --tls is: true turns TLS on (only "1" did:
// VODCTL_TLS=true went plaintext without a word), and a value that is
// neither on nor off is refused before any call; --tls=false on the
// command line wins over it.
func TestTLSFromEnvironment(t *testing.T) {
	plainAddr := adminServer(t, nil)
	t.Setenv("VODCTL_TLS_CA", "")
	run := func(env string, args ...string) error {
		t.Setenv("VODCTL_TLS", env)
		cmd := newRoot()
		cmd.SetOut(&strings.Builder{})
		cmd.SetErr(&strings.Builder{})
		cmd.SetArgs(append(append([]string{"--manager", plainAddr, "--timeout", "5s", "--token", ""}, args...), "nodes"))
		return cmd.Execute()
	}
	for _, on := range []string{"1", "true", "TRUE"} {
		if err := run(on); err == nil || !strings.Contains(err.Error(), "speaks plaintext gRPC") {
			t.Errorf("VODCTL_TLS=%s to a plaintext manager: %v, want TLS tried", on, err)
		}
	}
	for _, off := range []string{"", "0", "false"} {
		if err := run(off); status.Code(err) != codes.Unimplemented {
			t.Errorf("VODCTL_TLS=%q: %v, want plaintext (the manager's Unimplemented)", off, err)
		}
	}
	if err := run("true", "--tls=false"); status.Code(err) != codes.Unimplemented {
		t.Errorf("VODCTL_TLS=true --tls=false: %v, want plaintext", err)
	}
	if err := run("yes"); err == nil || !strings.Contains(err.Error(), `$VODCTL_TLS "yes": want 1 or 0 (true or false)`) {
		t.Errorf("VODCTL_TLS=yes: %v", err)
	}
}

// vodctl sessions --help says what its STATE and IDLE columns mean
// (orphaned and IDLE's "-" were said nowhere in vodctl), and vodctl
// policy --help that NAME switches the scheduling policy only: it said
// "switch to NAME" under a listing of two policies, and `vodctl policy
// gdsf` (the storage policy shown) is refused.
func TestSessionsAndPolicyHelp(t *testing.T) {
	help := func(args ...string) string {
		cmd := newRoot()
		var out strings.Builder
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append(args, "--help"))
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	s := help("sessions")
	for _, want := range []string{"orphaned (its node died", "finished (played to the end", "IDLE is the seconds since", `"-" while it is not idle`, "BITRATE is the bit/s reserved"} {
		if !strings.Contains(s, want) {
			t.Errorf("sessions --help lacks %q:\n%s", want, s)
		}
	}
	// A script reading vodctl's own help learns each exit status: 3 was
	// said only in the help of the commands that give it.
	if r := help(); !strings.Contains(r, "Exit status: 0 on success, 1 on an error, 3 for a change the manager made but could not\nsave in its store") {
		t.Errorf("vodctl --help:\n%s", r)
	}
	p := help("policy")
	if !strings.Contains(p, "switch the scheduling policy to NAME") || !strings.Contains(p, "The storage policy is not switched here") ||
		!strings.Contains(p, "Exit status 3 when the manager uses the new policy but could not save it") {
		t.Errorf("policy --help:\n%s", p)
	}
}

// absentAdmin answers SetNode as the manager does for a node not
// registered since it started but with a stored setting: a NodeInfo
// without addresses, the stored weight (0 when none is stored) and
// whether one is (weight_stored). "weighted" has 120 stored, "stopped" 0,
// the others none.
type absentAdmin struct{ v1.UnimplementedAdminServer }

func (absentAdmin) SetNode(_ context.Context, r *v1.SetNodeRequest) (*v1.NodeInfo, error) {
	info := &v1.NodeInfo{NodeId: r.NodeId, Draining: true, Overload: 0.85}
	switch {
	case r.Weight != nil:
		info.Weight, info.WeightStored = r.GetWeight(), true
	case r.NodeId == "weighted":
		info.Weight, info.WeightStored = 120, true
	case r.NodeId == "stopped":
		info.WeightStored = true
	case r.NodeId == "node-2": // registered
		info.RtspAddr, info.Alive, info.Weight = "127.0.0.1:1", true, 100
	}
	return info, nil
}

// vodctl node ID --weight N on a node not registered says the weight it
// stored (it said "draining true, overload 0.85" alone), as it says a
// stored weight, 0 too (weight_stored: a stored 0 was shown as none);
// with no weight stored it names none (the answer's 0 is not "weight 0").
func TestNodeAbsentShowsStoredWeight(t *testing.T) {
	run := vodctlAgainst(t, absentAdmin{})
	for _, c := range []struct {
		args    []string
		want    string
		without string
	}{
		{[]string{"node", "n3", "--weight", "7"}, "node n3: not registered; stored setting: draining true, weight 7, overload 0.85", ""},
		{[]string{"node", "n3", "--weight", "0"}, "draining true, weight 0, overload 0.85", ""},
		{[]string{"node", "weighted", "--drain"}, "draining true, weight 120, overload 0.85", ""},
		{[]string{"node", "stopped", "--drain"}, "draining true, weight 0, overload 0.85", ""},
		{[]string{"node", "n3", "--drain"}, "stored setting: draining true, overload 0.85; applied when it registers", "weight"},
		// One space after the colon: the tab of a one-row table padded two.
		{[]string{"node", "node-2", "--drain"}, "node node-2: alive true, draining true, weight 100", ""},
	} {
		out, err := run(c.args...)
		if err != nil || !strings.Contains(out, c.want) || (c.without != "" && strings.Contains(out, c.without)) {
			t.Errorf("vodctl %s: %v\n%s", strings.Join(c.args, " "), err, out)
		}
	}
}

// vodctl evict's usage names NODE as required, as its help and its
// refusal without it say (it showed "evict TITLE [NODE]").
func TestEvictUsageNodeRequired(t *testing.T) {
	cmd := newRoot()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"evict", "--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "vodctl evict TITLE NODE [flags]") || strings.Contains(out.String(), "[NODE]") {
		t.Fatalf("evict --help:\n%s", out.String())
	}
}

// $VODCTL_TLS is the manager's setting: vodctl play, which does not talk
// to the manager, plays with a value that is neither on nor off (it was
// refused: VODCTL_TLS=yes stopped every play), which the admin commands
// still refuse.
func TestPlayIgnoresVODCTLTLS(t *testing.T) {
	_, addr := startTSServer(t)
	t.Setenv("VODCTL_TLS", "yes")
	cmd := newRoot()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"play", "--duration", "300ms", "rtsp://demo:demo@" + addr + "/vod/sample-001"})
	if err := cmd.Execute(); err != nil || !strings.HasPrefix(out.String(), "played ") {
		t.Fatalf("VODCTL_TLS=yes vodctl play: %v\n%s", err, out.String())
	}
	cmd = newRoot()
	cmd.SetOut(&strings.Builder{})
	cmd.SetErr(&strings.Builder{})
	cmd.SetArgs([]string{"--manager", "127.0.0.1:1", "nodes"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), `$VODCTL_TLS "yes": want 1 or 0`) {
		t.Fatalf("VODCTL_TLS=yes vodctl nodes: %v", err)
	}
}

// clearedAdmin answers SetNode as the manager does when the change leaves
// a node not registered with no setting at all (an undrain of a node
// whose stored setting was its drain alone): the entry is removed, and
// the answer is the empty setting.
type clearedAdmin struct{ v1.UnimplementedAdminServer }

func (clearedAdmin) SetNode(_ context.Context, r *v1.SetNodeRequest) (*v1.NodeInfo, error) {
	return &v1.NodeInfo{NodeId: r.NodeId}, nil
}

// vodctl node ID --undrain that leaves a node not registered with no
// setting says the stored setting is gone: it said "stored setting:
// draining false, overload 0.00 (0 = default); applied when it
// registers", and the next change of that node was refused (NOT_FOUND:
// "not registered and has no stored setting").
func TestNodeAbsentSettingRemoved(t *testing.T) {
	run := vodctlAgainst(t, clearedAdmin{})
	out, err := run("node", "n3", "--undrain")
	if err != nil || !strings.Contains(out, "node n3: not registered; no stored setting left (removed)") || strings.Contains(out, "applied when it registers") {
		t.Fatalf("vodctl node n3 --undrain: %v\n%s", err, out)
	}
	out, err = run("node", "n3", "--weight", "0")
	if err != nil || !strings.Contains(out, "stored setting: draining false, weight 0") {
		t.Fatalf("vodctl node n3 --weight 0: %v\n%s", err, out)
	}
}
