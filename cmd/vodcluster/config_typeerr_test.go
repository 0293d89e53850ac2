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

// A value of the wrong kind given by an alias (*w) was said twice, both
// at the anchor's line and naming the anchor's key only: the decoder
// reports each use at the anchor. It is said once, with the keys of its
// aliases and their lines.
func TestConfigWrongKindThroughAlias(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte("node:\n  egress_bps: 1000\n  weight: &w yes\ncdp:\n  dir: /tmp\n  max_transfers: *w\n"), 0o600)
	_, err := loadConfig(path)
	want := "line 3: `yes` is not a whole number: write digits alone, without a unit or suffix (bit/s, bytes and counts are integers) (key weight, and max_transfers at line 6 by its alias *w)"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Count(err.Error(), "`yes`") != 1 {
		t.Errorf("%v\nwant once: %q", err, want)
	}
}
