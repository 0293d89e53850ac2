package cdp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCatalogPopularityHint: popularity (expected requests per day) is
// read from catalog.yaml and carried in the wire form; a title without it
// has none; a negative or non-finite one is an error naming the line.
func TestCatalogPopularityHint(t *testing.T) {
	clip := readClip(t, "clip-a.ts")
	load := func(doc string) (*Catalog, error) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "a.ts"), clip, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, CatalogFile), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return LoadCatalog(dir)
	}
	cat, err := load("titles:\n  - {id: hot, file: a.ts, popularity: 1200.5}\n  - {id: cold, file: a.ts}\n")
	if err != nil {
		t.Fatal(err)
	}
	hot, _ := cat.Title("hot")
	cold, _ := cat.Title("cold")
	if hot.PopularityPerDay != 1200.5 || cold.PopularityPerDay != 0 {
		t.Fatalf("hot %v cold %v", hot.PopularityPerDay, cold.PopularityPerDay)
	}
	if p := hot.Proto().GetPopularityPerDay(); p != 1200.5 {
		t.Fatalf("wire popularity %v", p)
	}
	for _, bad := range []string{"-1", ".nan", ".inf", "lots"} {
		_, err := load("titles:\n  - id: a\n    file: a.ts\n    popularity: " + bad + "\n")
		if err == nil {
			t.Fatalf("popularity %s accepted", bad)
		}
		if !strings.Contains(err.Error(), "popularity") && !strings.Contains(err.Error(), "line 4") {
			t.Errorf("popularity %s: error %q names neither the field nor the line", bad, err)
		}
	}
}

// TestSamplesPromoteThreeTitles: the sample catalog promotes sample-016..018
// and no other title (the end-to-end tests rely on which titles are hot).
func TestSamplesPromoteThreeTitles(t *testing.T) {
	cat, err := LoadCatalog(sampleDir(t))
	if err != nil {
		t.Fatal(err)
	}
	var hinted []string
	for _, ti := range cat.Titles() {
		if ti.PopularityPerDay > 0 {
			hinted = append(hinted, ti.ID)
		}
	}
	if got := strings.Join(hinted, ","); got != "sample-016,sample-017,sample-018" {
		t.Fatalf("promoted titles %s", got)
	}
}
