package cdp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	vodclusterv1 "vodcluster/proto/vodcluster/v1"
)

// publishNew copies clip-a.ts into s.Dir as new-release.ts and appends
// its entry to catalog.yaml, as an operator publishing a title does; it
// returns catalog.yaml as it was before and its path.
func publishNew(t *testing.T, s *Server) (before []byte, docPath string) {
	t.Helper()
	docPath = filepath.Join(s.Dir, CatalogFile)
	before, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "new-release.ts"), readClip(t, "clip-a.ts"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := string(before) + "  - id: new-release\n    name: New Release\n    file: new-release.ts\n    package: premium\n"
	if err := os.WriteFile(docPath, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return before, docPath
}

// ListTitles with check_directory looks at the title directory and loads
// a change found there before it answers: a title published a moment
// ago is listed at once, not at the next poll (an hour away here), which
// is what the manager's refresh (vodctl titles --refresh) asks. Without
// it the listing is the catalog loaded before, as from an older manager.
// A change the origin refuses is listed as its catalog_refused (the error
// it logged, naming the file and the line) with the titles before, in
// every answer until the directory loads again.
func TestListTitlesChecksDirectory(t *testing.T) {
	s, c := startServer(t, func(s *Server) { s.CatalogPoll = time.Hour; s.checkSettle = time.Millisecond })
	ctx := context.Background()
	good, docPath := publishNew(t, s)

	plain, err := c.ListTitles(ctx, &vodclusterv1.ListTitlesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.GetTitles()) != 20 || plain.GetDirectoryChecked() || plain.GetCatalogRefused() != "" {
		t.Fatalf("listing not asked to check: %d titles, checked %v, refused %q; want the 20 loaded before, unchecked",
			len(plain.GetTitles()), plain.GetDirectoryChecked(), plain.GetCatalogRefused())
	}
	checked, err := c.ListTitles(ctx, &vodclusterv1.ListTitlesRequest{CheckDirectory: true})
	if err != nil {
		t.Fatal(err)
	}
	if !checked.GetDirectoryChecked() || checked.GetCatalogRefused() != "" || len(checked.GetTitles()) != 21 {
		t.Fatalf("listing asked to check: %d titles, checked %v, refused %q; want 21 with new-release",
			len(checked.GetTitles()), checked.GetDirectoryChecked(), checked.GetCatalogRefused())
	}
	if ids := listIDs(t, c); ids["new-release"] == nil {
		t.Fatal("new-release not served after the checked listing")
	}
	if st := s.Stats(); st.CatalogReloads != 1 {
		t.Errorf("stats %+v: want the change loaded once", st)
	}
	// Checked again with nothing changed: no load.
	if _, err := c.ListTitles(ctx, &vodclusterv1.ListTitlesRequest{CheckDirectory: true}); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.CatalogReloads != 1 || st.CatalogRefused != 0 {
		t.Errorf("stats %+v after a check of an unchanged directory: want no load", st)
	}

	// An entry naming a file not there: refused, said in the answer.
	broken := string(good) + "  - id: missing\n    file: missing.ts\n"
	if err := os.WriteFile(docPath, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s: line %d: title \"missing\": file %s", docPath, strings.Count(broken, "\n")-1, filepath.Join(s.Dir, "missing.ts"))
	r, err := c.ListTitles(ctx, &vodclusterv1.ListTitlesRequest{CheckDirectory: true})
	if err != nil {
		t.Fatal(err)
	}
	if !r.GetDirectoryChecked() || !strings.Contains(r.GetCatalogRefused(), want) || len(r.GetTitles()) != 21 {
		t.Fatalf("check of a broken catalog: %d titles, checked %v, refused %q; want the 21 before and a refusal containing %q",
			len(r.GetTitles()), r.GetDirectoryChecked(), r.GetCatalogRefused(), want)
	}
	if st := s.Stats(); !st.CatalogStale || st.CatalogRefusal != r.GetCatalogRefused() {
		t.Errorf("stats %+v: want stale with the refusal answered", st)
	}
	page, err := c.ListTitles(ctx, &vodclusterv1.ListTitlesRequest{PageSize: 2})
	if err != nil || !strings.Contains(page.GetCatalogRefused(), want) {
		t.Fatalf("a listing not asked to check while refused: %v, refused %q", err, page.GetCatalogRefused())
	}

	// Fixed: the next check loads it, and the refusal is gone.
	if err := os.WriteFile(docPath, good, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err = c.ListTitles(ctx, &vodclusterv1.ListTitlesRequest{CheckDirectory: true})
	if err != nil || r.GetCatalogRefused() != "" || len(r.GetTitles()) != 20 {
		t.Fatalf("check of the fixed catalog: %v, %d titles, refused %q; want the 20 of catalog.yaml", err, len(r.GetTitles()), r.GetCatalogRefused())
	}
	if st := s.Stats(); st.CatalogStale || st.CatalogRefusal != "" {
		t.Errorf("stats %+v: want not stale", st)
	}
}
