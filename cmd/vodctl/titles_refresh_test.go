package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"vodcluster/cdp"
	"vodcluster/cdp/samples"
	v1 "vodcluster/proto/vodcluster/v1"
)

// vodctl titles --refresh against a real manager and origin: a title
// the operator just copied into the origin's directory and added to its
// catalog.yaml is published by the refresh at once (it said "published 0
// []" until the origin's next poll, up to two catalog_poll_intervals
// later; an hour here), and a catalog.yaml the origin refuses (an entry
// naming a file not there) gets a warning with the origin's error, naming
// the file and the line, where it said "published 0 []" and nothing else:
// vodctl's error line after the titles, exit status 1 (it was 0, and a
// script running it after a copy could not tell).
func TestTitlesRefreshSeesTheOriginsDirectory(t *testing.T) {
	dir := t.TempDir()
	origin := &cdp.Server{Dir: filepath.Join(dir, "cdp"), Listen: "127.0.0.1:0", Logger: quietLog, CatalogPoll: time.Hour}
	if err := samples.WriteTo(origin.Dir); err != nil {
		t.Fatal(err)
	}
	if err := origin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { origin.Close() })
	m, _ := startManager(t, dir, origin)
	refresh := func(wantCode int) (string, string) {
		t.Helper()
		var out, errOut strings.Builder
		if code := run([]string{"--manager", m.GRPCAddr(), "titles", "--refresh"}, &out, &errOut); code != wantCode {
			t.Fatalf("vodctl titles --refresh: exit status %d, want %d\nstandard error %q", code, wantCode, errOut.String())
		}
		return out.String(), errOut.String()
	}

	docPath := filepath.Join(origin.Dir, cdp.CatalogFile)
	good, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	clip, err := os.ReadFile(filepath.Join(origin.Dir, "clip-b.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(origin.Dir, "premiere.ts"), clip, 0o644); err != nil {
		t.Fatal(err)
	}
	published := string(good) + "  - id: premiere\n    name: Premiere\n    file: premiere.ts\n    package: basic\n"
	if err := os.WriteFile(docPath, []byte(published), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut := refresh(0)
	if !strings.Contains(errOut, "catalog read from the origin: 21 titles; published 1 [premiere], withdrawn 0 [], replaced 0 []") ||
		strings.Contains(errOut, "warning") || strings.Contains(errOut, "note") || !strings.Contains(out, "Premiere") {
		t.Fatalf("titles --refresh right after publishing:\n%s\nstandard error %q", out, errOut)
	}

	broken := published + "  - id: missing\n    file: missing.ts\n"
	if err := os.WriteFile(docPath, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut = refresh(1)
	want := fmt.Sprintf("vodctl: warning: the origin refused its changed catalog (cdp: %s: line %d: title \"missing\": file %s",
		docPath, strings.Count(broken, "\n")-1, filepath.Join(origin.Dir, "missing.ts"))
	if !strings.Contains(errOut, "catalog read from the origin: 21 titles; published 0 [], withdrawn 0 [], replaced 0 []\n"+want) ||
		!strings.HasSuffix(errOut, "): it serves the titles it loaded before; fix its title directory (the origin's log says \"catalog not reloaded\"), then vodctl titles --refresh\n") ||
		!strings.Contains(out, "Premiere") {
		t.Fatalf("titles --refresh of a catalog the origin refused:\n%s\nstandard error %q\nwant %q, exit status 1", out, errOut, want)
	}
}

// After a refresh, an origin that predates check_directory (the manager
// says it did not look at its directory) gets a note that a change made
// in the last seconds may not be in the read; a manager that predates
// saying (origin_checked_directory unset) gets nothing more than before;
// an origin whose directory kept changing while it looked (a copy in
// progress) gets a warning that the change is not loaded yet.
func TestRefreshNoteOlderOriginOrManager(t *testing.T) {
	checked, unchecked := true, false
	if got := refreshNote(&v1.RefreshCatalogResponse{OriginCheckedDirectory: &unchecked}); !strings.Contains(got, "did not look at its title directory") ||
		!strings.Contains(got, "catalog_poll_interval") {
		t.Errorf("note for an origin that did not look: %q", got)
	}
	if got := refreshNote(&v1.RefreshCatalogResponse{OriginCheckedDirectory: &checked, OriginDirectoryChanging: true}); !strings.Contains(got,
		"the origin's title directory is still changing (a copy in progress?): not loaded yet; run --refresh again once copies are over") {
		t.Errorf("note for an origin whose directory kept changing: %q", got)
	}
	for _, r := range []*v1.RefreshCatalogResponse{{}, {OriginCheckedDirectory: &checked}} {
		if got := refreshNote(r); got != "" {
			t.Errorf("note for %v: %q, want none", r, got)
		}
	}
}

// copyingOriginAdmin is a manager whose origin's title directory kept
// changing while it looked (origin_directory_changing): nothing of the
// change loaded.
type copyingOriginAdmin struct{ v1.UnimplementedAdminServer }

func (copyingOriginAdmin) RefreshCatalog(context.Context, *v1.RefreshCatalogRequest) (*v1.RefreshCatalogResponse, error) {
	checked := true
	return &v1.RefreshCatalogResponse{Titles: 1, OriginCheckedDirectory: &checked, OriginDirectoryChanging: true}, nil
}

func (copyingOriginAdmin) ListTitles(context.Context, *v1.ListTitlesRequest) (*v1.ListTitlesResponse, error) {
	has := true
	return &v1.ListTitlesResponse{Titles: []*v1.Title{{Id: "t1", Name: "One"}}, HasCatalog: &has}, nil
}

// A refresh whose origin's directory was still changing (a copy in
// progress: the change not loaded) lists the titles and ends with the
// warning as its error (exit status 1), as a refused change does: a
// script that copied a title in sees that it is not served yet.
func TestTitlesRefreshDirectoryChangingIsAnError(t *testing.T) {
	out, err := vodctlAgainst(t, copyingOriginAdmin{})("titles", "--refresh")
	if err == nil || !strings.Contains(err.Error(), "still changing (a copy in progress?): not loaded yet") || !strings.Contains(out, "One") {
		t.Fatalf("titles --refresh while the origin's directory changes: %v\n%s\nwant the titles and the warning as the error", err, out)
	}
}
