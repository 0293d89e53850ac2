package boundcheck

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"vodcluster/smm/bound"
	"vodcluster/smm/replay"
)

func writeTrace(t *testing.T) string {
	t.Helper()
	reqs, err := replay.Synthetic{Requests: 3000, Titles: 300, Alpha: 0.9, MinBytes: 1 << 20, MaxBytes: 64 << 20, Seed: 5}.Trace()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, _ := bound.NewCSVWriter(&buf)
	seen := map[string]bool{}
	for i, r := range reqs {
		node := "n1"
		switch i % 100 {
		case 0:
			node = "" // refused
		case 50:
			node = "-1" // refused, as the simulator writes it
		}
		w.Write(bound.Record{Time: r.Time, Title: r.Title, Bytes: r.Bytes, Node: node, Fill: node != "" && !seen[r.Title]})
		seen[r.Title] = true
	}
	w.Flush()
	p := filepath.Join(t.TempDir(), "trace.csv")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCommand(t *testing.T) {
	p := writeTrace(t)
	cmd := NewCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--trace", p, "--capacity", "2000000000", "--json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Rows != 3000 || res.Served != 2940 || len(res.Policies) != 5 || res.Bound.OriginBytes <= 0 || res.TraceFillBytes <= 0 {
		t.Fatalf("result %+v", res)
	}
	for _, pr := range res.Policies {
		if pr.OriginBytes < res.Bound.OriginBytes {
			t.Fatalf("%s below the bound", pr.Policy)
		}
	}
	out.Reset()
	cmd = NewCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--trace", p, "--capacity", "2000000000", "--policies", "lru,gdsf"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"lower bound", "feasible offline schedule", "lru as one cache", "gdsf as one cache"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCommandErrors(t *testing.T) {
	p := writeTrace(t)
	bad := filepath.Join(t.TempDir(), "bad.csv")
	os.WriteFile(bad, []byte("time_s,title,bytes,node,fill\n1,a,-1,n,true\n"), 0o644)
	headerOnly := filepath.Join(t.TempDir(), "header.csv")
	os.WriteFile(headerOnly, []byte("time_s,title,bytes,node,fill,end_s\n"), 0o644)
	for _, args := range [][]string{
		{"--trace", headerOnly, "--capacity", "10"},
		{"--trace", p},
		{"--capacity", "10"},
		{"--trace", filepath.Join(t.TempDir(), "missing.csv"), "--capacity", "10"},
		{"--trace", bad, "--capacity", "10"},
		{"--trace", p, "--capacity", "10", "--policies", "belady"},
	} {
		cmd := NewCommand()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(args)
		if err := cmd.Execute(); err == nil {
			t.Fatalf("%v accepted", args)
		}
	}
}

// The policies named are checked before the bounds are computed (a
// simulated day takes tens of seconds), an empty entry names none, and a
// --policies naming nothing is an error rather than every policy.
func TestCommandPolicyNames(t *testing.T) {
	dir := t.TempDir()
	tooBig := filepath.Join(dir, "big.csv")
	os.WriteFile(tooBig, []byte("time_s,title,bytes,node,fill,end_s\n1,a,2000,n1,true,2\n"), 0o644)
	ok := filepath.Join(dir, "ok.csv")
	os.WriteFile(ok, []byte("time_s,title,bytes,node,fill,end_s\n1,a,100,n1,true,2\n3,b,200,n1,true,4\n5,a,100,n1,true,6\n"), 0o644)
	run := func(args ...string) (string, error) {
		cmd := NewCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	if _, err := run("--capacity", "1000", "--policies", "belady", tooBig); err == nil || !strings.Contains(err.Error(), "unknown eviction policy") {
		t.Fatalf("unknown policy with an infeasible trace: %v", err)
	}
	for _, p := range []string{"", " , "} {
		if _, err := run("--capacity", "1000", "--policies", p, ok); err == nil || !strings.Contains(err.Error(), "names no policy") {
			t.Fatalf("--policies %q: %v", p, err)
		}
	}
	out, err := run("--capacity", "1000", "--json", "--policies", "lru,,gdsf", ok)
	var res Result
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || len(res.Policies) != 2 {
		t.Fatalf("lru,,gdsf: %v, %d policies: %s", err, len(res.Policies), out)
	}
}

// The usage shows --capacity as required, and a command missing the trace
// or the capacity says which: "bound day.csv", as the usage showed
// capacity optional, was refused for "a trace file and a positive
// --capacity", naming both.
func TestCommandSaysWhatIsMissing(t *testing.T) {
	p := writeTrace(t)
	if use := NewCommand().Use; !strings.HasPrefix(use, "bound --capacity BYTES ") {
		t.Errorf("Use %q: want --capacity shown as required", use)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{p}, "bound: --capacity BYTES is required: the cache size in bytes"},
		{[]string{"--trace", p}, "bound: --capacity BYTES is required: the cache size in bytes"},
		{[]string{"--capacity", "10"}, "bound: no trace file: give it as the argument, or --trace FILE"},
		{nil, "bound: no trace file and no --capacity: give both"},
		{[]string{"--capacity", "0", p}, "bound: --capacity 0: must be > 0"},
		{[]string{"--capacity", "-5", p}, "bound: --capacity -5: must be > 0"},
	} {
		cmd := NewCommand()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(tc.args)
		if err := cmd.Execute(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: %v; want an error beginning %q", tc.args, err, tc.want)
		}
	}
}
