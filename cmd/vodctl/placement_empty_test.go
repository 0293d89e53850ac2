package main

import (
	"strings"
	"testing"
)

// vodctl placement --title of a title in the catalog that no node holds
// says so on standard error, and how it gets there (it printed the header
// alone, read as an answer cut short); with --node, of that node. A title
// not in the catalog is refused, exit status 1. A title held gets no note.
func TestPlacementOfTitleNotHeldSaysSo(t *testing.T) {
	addr, _ := startCluster(t)
	run := func(args ...string) (string, string, error) {
		cmd := newRoot()
		var out, errOut strings.Builder
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs(append([]string{"--manager", addr, "--token", ""}, args...))
		err := cmd.Execute()
		return out.String(), errOut.String(), err
	}
	out, errOut, err := run("placement", "--title", "sample-002")
	if err != nil || strings.Count(strings.TrimSpace(out), "\n") != 0 ||
		errOut != "note: sample-002: no node holds or fills it; it is fetched from the origin at its first request, or order it now: vodctl prefetch sample-002\n" {
		t.Errorf("placement --title sample-002: %v\n%s\nstandard error %q", err, out, errOut)
	}
	if _, errOut, err = run("placement", "--title", "sample-002", "--node", "node-1"); err != nil || !strings.Contains(errOut, "node node-1 neither holds nor fills it") {
		t.Errorf("placement --title sample-002 --node node-1: %v, standard error %q", err, errOut)
	}
	if out, errOut, err = run("--json", "placement", "--title", "sample-002"); err != nil || errOut != "" {
		t.Errorf("--json placement --title sample-002: %v\n%s\nstandard error %q", err, out, errOut)
	}
	if _, _, err = run("placement", "--title", "nosuch"); err == nil || !strings.Contains(err.Error(), `title "nosuch" is not in the catalog`) {
		t.Errorf("placement --title nosuch: %v, want not in the catalog", err)
	}
	if _, _, err = run("prefetch", "sample-002", "node-1"); err != nil {
		t.Fatalf("prefetch: %v", err)
	}
	if out, errOut, err = run("placement", "--title", "sample-002"); err != nil || !strings.Contains(out, "node-1") || errOut != "" {
		t.Errorf("placement --title sample-002 once ordered: %v\n%s\nstandard error %q", err, out, errOut)
	}
}
