package main

import (
	"net"
	"strings"
	"testing"

	"vodcluster/acm"
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
