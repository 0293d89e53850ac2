package cdp

import (
	"os"
	"path/filepath"
	"testing"
)

// The example catalog shipped in deploy/config decodes and its entries
// pass the catalog's checks (the title files it names are not there).
func TestDeployCatalogExample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "deploy", "config", CatalogFile))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := parseCatalog(data, t.TempDir())
	if err != nil {
		t.Fatalf("deploy/config/%s: %v", CatalogFile, err)
	}
	if len(entries) == 0 {
		t.Fatal("example catalog lists no title")
	}
}
