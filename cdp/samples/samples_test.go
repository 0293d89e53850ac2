package samples_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
