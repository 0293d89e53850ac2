package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A value of the wrong kind is named by its key, in the configuration's
// words: `egress_bps: 20M` was "line 3: cannot unmarshal !!str `20M` into
// int64", naming a Go type and no key.
func TestConfigWrongKindNamesKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node.yaml")
	os.WriteFile(path, []byte("node:\n  id: vod-01\n  egress_bps: 20M\n  weight: [1, 2]\n  origin_tls: yes please\n  session_timeout: 60\n"), 0o600)
	_, err := loadConfig(path)
	if err == nil {
		t.Fatal("wrong kinds of values accepted")
	}
	for _, want := range []string{
		"--config " + path + ": ",
		"line 3: `20M` is not a whole number: write digits alone, without a unit or suffix (bit/s, bytes and counts are integers) (key egress_bps)",
		"line 4: a list where a single value belongs (key weight)",
		"line 5: `yes please` is not true or false (key origin_tls)",
		"line 6: session_timeout 60: not a duration: write it with its unit, like 60s, 5m, 3h or 7d (days)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in the error:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "unmarshal") || strings.Contains(err.Error(), "int64") {
		t.Errorf("the error names the decoder's Go types:\n%v", err)
	}
}

// A value of the wrong kind on a section's first line, or in a flow
// mapping on its key's line, was named by the section ("line 2: `20M` is
// not a whole number ... (key node)"): the section's mapping starts at
// the line of its first key. The innermost key is named.
func TestConfigWrongKindFirstKeyOfSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	for _, c := range []struct{ yaml, want string }{
		{"node:\n  egress_bps: 20M\n", "line 2: `20M` is not a whole number: write digits alone, without a unit or suffix (bit/s, bytes and counts are integers) (key egress_bps)"},
		{"node:\n  egress_bps: \"20\"\n", "(key egress_bps)"},
		{"manager:\n  scheduler:\n    a: lots\n", "line 3: `lots` is not a number (key a)"},
		{"node: {egress_bps: 20M, weight: 3}\n", "line 1: `20M` is not a whole number: write digits alone, without a unit or suffix (bit/s, bytes and counts are integers) (key egress_bps)"},
		{"node: {weight: [1, 2]}\n", "line 1: a list where a single value belongs (key weight)"},
		{"node:\n  <<: {egress_bps: 20M}\n", "(key egress_bps)"},
	} {
		os.WriteFile(path, []byte(c.yaml), 0o600)
		_, err := loadConfig(path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.yaml, err, c.want)
		}
	}
}
