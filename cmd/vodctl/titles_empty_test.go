package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"vodcluster/acm"
	"vodcluster/cdp"
	v1 "vodcluster/proto/vodcluster/v1"
)

// vodctl titles against a manager with no title says why there may be
// none and what to do, on standard error: against a manager started with
// its origin out of reach and no catalog stored it printed a header alone
// and exited 0, as for a catalog that is empty. A manager with titles
// gets no such note.
func TestTitlesEmptySaysWhy(t *testing.T) {
	dir := t.TempDir()
	origin := startOrigin(t, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := ln.Addr().String()
	ln.Close()
	dark, _ := startManagerWith(t, t.TempDir(), origin, func(m *acm.Manager) { m.OriginAddr = unreachable })
	run := func(addr string) (string, string, error) {
		cmd := newRoot()
		var out, errOut strings.Builder
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs([]string{"--manager", addr, "titles"})
		err := cmd.Execute()
		return out.String(), errOut.String(), err
	}
	out, errOut, err := run(dark.GRPCAddr())
	if err != nil {
		t.Fatalf("titles: %v", err)
	}
	if strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("titles listed without a catalog:\n%s", out)
	}
	for _, want := range []string{"no title", "vodctl titles --refresh"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("standard error %q: want %q in it", errOut, want)
		}
	}

	lit, _ := startManager(t, dir, origin)
	out, errOut, err = run(lit.GRPCAddr())
	if err != nil || !strings.Contains(out, "sample-001") || errOut != "" {
		t.Fatalf("titles with a catalog: %v\n%s\nstandard error %q", err, out, errOut)
	}
}

// vodctl titles tells a manager whose catalog is empty (its origin
// answered with no title) from one that has no catalog (its origin not
// reached since it started), and says what to do for each; --json
// carries hasCatalog and catalogReadUnixMs. Both cases printed the same
// note, "empty, or not read yet", before the manager said which.
func TestTitlesEmptyOrNotReadSaysWhich(t *testing.T) {
	bare := filepath.Join(t.TempDir(), "cdp")
	if err := os.MkdirAll(bare, 0o755); err != nil {
		t.Fatal(err)
	}
	empty := &cdp.Server{Dir: bare, Listen: "127.0.0.1:0", Logger: quietLog}
	if err := empty.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { empty.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := ln.Addr().String()
	ln.Close()
	before := time.Now().UnixMilli()
	emptyMgr, _ := startManager(t, t.TempDir(), empty)
	dark, _ := startManagerWith(t, t.TempDir(), empty, func(m *acm.Manager) { m.OriginAddr = unreachable })
	run := func(args ...string) (string, string) {
		t.Helper()
		cmd := newRoot()
		var out, errOut strings.Builder
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("vodctl %v: %v\nstandard error %q", args, err, errOut.String())
		}
		return out.String(), errOut.String()
	}

	for _, c := range []struct {
		name, addr  string
		want, avoid []string
		has         bool
		read        bool
	}{
		{"empty catalog", emptyMgr.GRPCAddr(),
			[]string{"no title", "catalog is empty", "publish titles in the origin's directory", "then vodctl titles --refresh"},
			[]string{"not read yet", "not reached", "no catalog yet"}, true, true},
		{"no catalog", dark.GRPCAddr(),
			[]string{"no title", "no catalog yet", "has not reached its origin since it started", "reachable at the manager's origin address", "/healthz", "vodctl titles --refresh"},
			[]string{"is empty", "publish titles"}, false, false},
	} {
		out, errOut := run("--manager", c.addr, "titles")
		if strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("%s: titles listed:\n%s", c.name, out)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s: standard error %q: want %q in it", c.name, errOut, w)
			}
		}
		for _, a := range c.avoid {
			if strings.Contains(errOut, a) {
				t.Errorf("%s: standard error %q: %q in it", c.name, errOut, a)
			}
		}
		out, _ = run("--manager", c.addr, "--json", "titles")
		var got struct {
			Titles            []any  `json:"titles"`
			HasCatalog        *bool  `json:"hasCatalog"`
			CatalogReadUnixMs *int64 `json:"catalogReadUnixMs"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: --json: %v\n%s", c.name, err, out)
		}
		if got.HasCatalog == nil || *got.HasCatalog != c.has || got.CatalogReadUnixMs == nil ||
			(*got.CatalogReadUnixMs >= before) != c.read || (!c.read && *got.CatalogReadUnixMs != 0) || len(got.Titles) != 0 {
			t.Errorf("%s: --json %s: want hasCatalog %v, catalogReadUnixMs since %d: %v", c.name, out, c.has, before, c.read)
		}
	}

	// After a refresh that read an empty catalog: no "--refresh" to run.
	_, errOut := run("--manager", emptyMgr.GRPCAddr(), "titles", "--refresh")
	if !strings.Contains(errOut, "catalog read from the origin: 0 titles") || !strings.Contains(errOut, "publish titles") || strings.Contains(errOut, "then vodctl titles --refresh") {
		t.Errorf("titles --refresh of an empty catalog: standard error %q", errOut)
	}
}

// A manager that does not say whether it has a catalog (one older than
// has_catalog) gets the note that says both are possible.
func TestNoTitleNoteOlderManager(t *testing.T) {
	if got := noTitleNote(&v1.ListTitlesResponse{}, false); !strings.Contains(got, "empty, or not read yet") {
		t.Errorf("note for an older manager: %q", got)
	}
	if got := noTitleNote(&v1.ListTitlesResponse{}, true); got != "" {
		t.Errorf("note for an older manager after --refresh: %q", got)
	}
}

// vodctl titles against a manager with no origin (manager.origin not set)
// and no stored title says so and what to do: it said "the catalog is
// empty; publish titles in the origin's directory, then vodctl titles
// --refresh", and that --refresh crashed the manager. --refresh now gets
// FAILED_PRECONDITION saying there is no origin, and the manager answers on.
func TestTitlesNoOriginSaysSo(t *testing.T) {
	origin := startOrigin(t, t.TempDir())
	m, _ := startManagerWith(t, t.TempDir(), origin, func(m *acm.Manager) { m.OriginAddr = "" })
	run := func(args ...string) (string, string, error) {
		cmd := newRoot()
		var out, errOut strings.Builder
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs(append([]string{"--manager", m.GRPCAddr()}, args...))
		err := cmd.Execute()
		return out.String(), errOut.String(), err
	}
	out, errOut, err := run("titles")
	if err != nil || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("titles: %v\n%s", err, out)
	}
	for _, w := range []string{"no title", "no origin", "manager.origin not set", "restart"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("standard error %q: want %q in it", errOut, w)
		}
	}
	for _, a := range []string{"is empty", "publish titles", "--refresh", "not reached"} {
		if strings.Contains(errOut, a) {
			t.Errorf("standard error %q: %q in it", errOut, a)
		}
	}
	_, _, err = run("titles", "--refresh")
	if err == nil || !strings.HasSuffix(err.Error(), "[FAILED_PRECONDITION]") || !strings.Contains(err.Error(), "no origin") {
		t.Fatalf("titles --refresh with no origin: %v, want FailedPrecondition saying no origin", err)
	}
	if _, _, err := run("titles"); err != nil {
		t.Fatalf("the manager after titles --refresh: %v", err)
	}
}
