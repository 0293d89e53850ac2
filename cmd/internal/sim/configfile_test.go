package sim

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// --print-config prints every key of the configuration, with the flags
// given applied; loaded back with --config it prints the same again and
// runs the same simulation as the flags.
func TestPrintConfigRoundTrip(t *testing.T) {
	small := []string{"--subscribers", "3000", "--titles", "150", "--nodes", "3", "--policies", "lall,rr", "--cdp-setup", "3s", "--load-a", "0"}
	printed, err := runCommand(append(small, "--print-config")...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\n  subscribers: 3000\n", "\n  titles: 150\n", "\npolicies: [lall, rr]", "\n  setup_delay: 3s\n", "\n  a: 0\n", "\n  normal: 0.8\n"} {
		if !strings.Contains(printed, want) {
			t.Errorf("printed config lacks %q:\n%s", want, printed)
		}
	}
	// Every key of the file format is printed.
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(printed), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range configKeys() {
		path := strings.Split(strings.ReplaceAll(k, "[]", ".0"), ".")
		if keyAt(doc.Content[0], path) == nil {
			t.Errorf("key %s not printed", k)
		}
	}
	file := filepath.Join(t.TempDir(), "sim.yaml")
	if err := os.WriteFile(file, []byte(printed), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := runCommand("--config", file, "--print-config")
	if err != nil {
		t.Fatal(err)
	}
	if again != printed {
		t.Fatalf("printed config loaded and printed again differs:\n%s\n---\n%s", printed, again)
	}
	fromFlags, err := runCommand(append(small, "--json")...)
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := runCommand("--config", file, "--json")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := figures(t, fromFlags), figures(t, fromFile); !reflect.DeepEqual(a, b) || len(a) != 2 || a[0]["origin_bytes"] == nil {
		t.Fatalf("the run from the printed file differs from the run of the flags:\n%s\n---\n%s", fromFlags, fromFile)
	}
	// The default printed loads back to the default's run: the scheduler's
	// parameters printed are lsm's defaults, origin_channels the cdp's.
	def, err := runCommand("--print-config")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	c := Default()
	if err := c.LoadFile(file); err != nil {
		t.Fatal(err)
	}
	d := Default()
	for _, p := range d.policies() {
		if !reflect.DeepEqual(c.lsmConfig(p), d.lsmConfig(p)) {
			t.Fatalf("%s: lsm config from the printed default %+v, default %+v", p, c.lsmConfig(p), d.lsmConfig(p))
		}
	}
	c.Scheduler, d.Scheduler = SchedulerParams{}, SchedulerParams{}
	c.Policies, c.StoragePolicies, c.Sites.Aware = nil, nil, nil // printed as [], read back empty
	if !reflect.DeepEqual(c, d) {
		t.Fatalf("printed default loads as\n%+v\nnot\n%+v", c, d)
	}
}

// figures returns the objects of sim --json, less their timings (which
// vary from run to run).
func figures(t *testing.T, js string) []map[string]any {
	t.Helper()
	var rs []map[string]any
	if err := json.Unmarshal([]byte(js), &rs); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		for k := range r {
			if strings.HasSuffix(k, "_ns") || k == "wall_s" {
				delete(r, k)
			}
		}
	}
	return rs
}

// keyAt returns the node at path in the mapping (or list, by index) n.
func keyAt(n *yaml.Node, path []string) *yaml.Node {
	if len(path) == 0 {
		return n
	}
	if n.Kind == yaml.SequenceNode {
		if len(n.Content) == 0 {
			return nil
		}
		return keyAt(n.Content[0], path[1:])
	}
	if v := findKey(n, path[0]); v != nil {
		return keyAt(v, path[1:])
	}
	return nil
}

// An unknown key is named with its line and section, with the key meant
// when it is a flag's name or another section's key, and the error points
// to --print-config.
func TestConfigUnknownKeyNamed(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string][]string{
		"seed: 2\nsubscribers: 1000\n": {`line 2: unknown key "subscribers" at the top level`, "demand.subscribers"},
		"titles: 500\n":                {`"titles" at the top level`, "demand.titles"},
		"zipf: 1\n":                    {`"zipf"`, "demand.zipf_alpha"},
		"demand:\n  channels: 3\n":     {`"channels" in demand`, "cdp.channels"},
		"demand:\n  titels: 3\n":       {`line 2: unknown key "titels" in demand`},
		"cluster:\n  nodes:\n    - count: 3\n    - count: 1\n      egress: 5\n": {`line 5: unknown key "egress" in cluster.nodes[1]`},
	} {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := runCommand("--config", p, "--print-config")
		if err == nil {
			t.Fatalf("%q accepted", body)
		}
		for _, w := range append(want, p, "--print-config") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %v\nlacks %q", body, err, w)
			}
		}
		if strings.Contains(err.Error(), "not found in type") {
			t.Errorf("%q: the decoder's raw error: %v", body, err)
		}
	}
}

// Every flag that sets a key of the file names that key in flagKeys, and
// every key there is one of the file's.
func TestFlagKeysAreKeys(t *testing.T) {
	keys := map[string]bool{}
	for _, k := range configKeys() {
		keys[k] = true
	}
	for f, k := range flagKeys {
		if !keys[k] {
			t.Errorf("flag --%s: key %s is not in the file", f, k)
		}
	}
	notKeys := map[string]bool{"config": true, "print-config": true, "json": true, "markdown": true, "plot": true, "trace-out": true, "help": true, "large-catalog": true}
	cmd := NewCommand()
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if _, ok := flagKeys[f.Name]; !ok && !notKeys[f.Name] {
			t.Errorf("flag --%s has no key in flagKeys", f.Name)
		}
	})
}

// --site-aware, --site-only and --site-local without sites are refused,
// naming --sites, rather than ignored; sites from the flags or the
// --config file make them valid.
func TestSiteFlagsNeedSites(t *testing.T) {
	for _, args := range [][]string{{"--site-aware", "all"}, {"--site-only"}, {"--site-local", "0.5"}, {"--site-aware", "none", "--sites", "1"}} {
		out, err := runCommand(append(args, "--print-config")...)
		if err == nil || !strings.Contains(err.Error(), "--sites") || !strings.Contains(err.Error(), args[0]) || out != "" {
			t.Errorf("%q: err %v, printed %d bytes", args, err, len(out))
		}
	}
	if _, err := runCommand("--site-aware", "all,none", "--site-local", "0.5", "--sites", "2", "--print-config"); err != nil {
		t.Errorf("with --sites: %v", err)
	}
	p := filepath.Join(t.TempDir(), "sites.yaml")
	if err := os.WriteFile(p, []byte("sites:\n  count: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCommand("--config", p, "--site-aware", "scheduler", "--site-only", "--print-config")
	if err != nil || !strings.Contains(out, "\n  only: true\n") || !strings.Contains(out, "aware: [scheduler]") {
		t.Errorf("sites from the file: %v\n%s", err, out)
	}
	// --sites 1 given over a file's sites turns them off: refused again.
	if _, err := runCommand("--config", p, "--sites", "1", "--site-only", "--print-config"); err == nil {
		t.Error("--site-only with --sites 1 over the file's sites accepted")
	}
}

// A --config file of more than one YAML document is refused, naming the
// file: the documents after the first were ignored (a second "days: 3"
// ran 2 days), as LoadFile's doc said they were not.
func TestConfigTrailingDocumentRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("days: 2\n---\ndays: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCommand("--config", p, "--print-config")
	if err == nil {
		t.Fatalf("two documents accepted:\n%s", out)
	}
	for _, w := range []string{p, "line 3", "one YAML document"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%v lacks %q", err, w)
		}
	}
	// A trailing --- alone opens no document worth refusing.
	if err := os.WriteFile(p, []byte("---\ndays: 2\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runCommand("--config", p, "--print-config"); err != nil || !strings.Contains(out, "\ndays: 2\n") {
		t.Fatalf("one document between ---: %v\n%s", err, out)
	}
}
