package samples_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"vodcluster/cdp"
	"vodcluster/cdp/samples"
)

func TestWriteToLoads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "titles") // WriteTo creates it
	if err := samples.WriteTo(dir); err != nil {
		t.Fatal(err)
	}
	cat, err := cdp.LoadCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids := samples.IDs()
	if len(ids) != 20 || ids[0] != "sample-001" || ids[19] != "sample-020" || cat.Len() != len(ids) {
		t.Fatalf("IDs %v, catalog of %d", ids, cat.Len())
	}
	clips := []string{"clip-a.ts", "clip-b.ts", "clip-c.ts"}
	for i, id := range ids {
		ti, ok := cat.Title(id)
		if !ok {
			t.Fatalf("%s not in the catalog", id)
		}
		wantPkg := "basic"
		if i >= 10 {
			wantPkg = "premium"
		}
		if ti.Package != wantPkg || filepath.Base(ti.Path) != clips[i%3] {
			t.Errorf("%s: package %s file %s, want %s on %s", id, ti.Package, filepath.Base(ti.Path), wantPkg, clips[i%3])
		}
		if ti.Name == id || ti.Name == "" {
			t.Errorf("%s: name %q", id, ti.Name)
		}
	}
}

func TestWriteToIdempotent(t *testing.T) {
	dir := t.TempDir()
	if err := samples.WriteTo(dir); err != nil {
		t.Fatal(err)
	}
	st1, err := os.Stat(filepath.Join(dir, "clip-a.ts"))
	if err != nil {
		t.Fatal(err)
	}
	// A damaged file is restored; an intact one is left as it is.
	if err := os.WriteFile(filepath.Join(dir, "clip-b.ts"), []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := samples.WriteTo(dir); err != nil {
		t.Fatal(err)
	}
	st2, err := os.Stat(filepath.Join(dir, "clip-a.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(st1, st2) {
		t.Error("intact clip-a.ts was rewritten")
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(des) != 4 {
		t.Errorf("%d entries in dir, want the 4 files (no temporaries): %v", len(des), des)
	}
	for _, name := range []string{"clip-a.ts", "clip-b.ts", "clip-c.ts", "catalog.yaml"} {
		want, err := fs.ReadFile(samples.FS(), name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, want %d (%v)", name, len(got), len(want), err)
		}
	}
}

// A catalog.yaml already in the directory is the operator's: WriteTo
// leaves it as it is (a title added to the data directory of vodcluster up
// stays published across restarts: it was overwritten by the samples'
// catalog and withdrawn), while a damaged clip is still restored.
func TestWriteToKeepsTheCatalog(t *testing.T) {
	dir := t.TempDir()
	if err := samples.WriteTo(dir); err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(dir, "catalog.yaml")
	sample, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	edited := append(slices.Clone(sample), "  - id: long-001\n    name: \"Long\"\n    file: clip-a.ts\n"...)
	if err := os.WriteFile(doc, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "clip-c.ts"), []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := samples.WriteTo(dir); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(doc); err != nil || !bytes.Equal(got, edited) {
		t.Fatalf("catalog.yaml after WriteTo: %d bytes (%v), want the edited %d bytes kept", len(got), err, len(edited))
	}
	cat, err := cdp.LoadCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cat.Title("long-001"); !ok || cat.Len() != 21 {
		t.Fatalf("catalog after WriteTo: %d titles, long-001 listed %v: want the 20 samples and long-001", cat.Len(), ok)
	}
}

func TestWriteToError(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := samples.WriteTo(filepath.Join(f, "sub")); err == nil {
		t.Error("WriteTo under a regular file succeeded")
	}
}

func ExampleIDs() {
	ids := samples.IDs()
	fmt.Println(len(ids), ids[0], ids[len(ids)-1])
	// Output: 20 sample-001 sample-020
}
