package cdp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"vodcluster/cdp/samples"
	"vodcluster/cdp/tsindex"
)

// sampleDir writes the sample titles into a new temporary directory.
func sampleDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := samples.WriteTo(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readClip(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("samples", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestLoadCatalogSamples(t *testing.T) {
	dir := sampleDir(t)
	cat, err := LoadCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if cat.Len() != 20 {
		t.Fatalf("Len = %d, want 20", cat.Len())
	}
	ids := make([]string, 0, cat.Len())
	for _, ti := range cat.Titles() {
		ids = append(ids, ti.ID)
		st, err := os.Stat(ti.Path)
		if err != nil {
			t.Fatal(err)
		}
		if ti.SizeBytes != st.Size() || ti.SizeBytes%tsindex.PacketSize != 0 {
			t.Errorf("%s: size %d, file has %d", ti.ID, ti.SizeBytes, st.Size())
		}
		if ti.DurationS < 19.5 || ti.DurationS > 20.5 {
			t.Errorf("%s: duration %.3f s, want about 20", ti.ID, ti.DurationS)
		}
		if ti.BitrateBps < 570_000 || ti.BitrateBps > 630_000 {
			t.Errorf("%s: bitrate %d bit/s, want about 600000", ti.ID, ti.BitrateBps)
		}
		if want := float64(ti.SizeBytes) * 8 / ti.DurationS; float64(ti.BitrateBps)-want > 1 || want-float64(ti.BitrateBps) > 1 {
			t.Errorf("%s: bitrate %d, size*8/duration = %.1f", ti.ID, ti.BitrateBps, want)
		}
		if ti.Name == "" || ti.Name == ti.ID {
			t.Errorf("%s: no human name (%q)", ti.ID, ti.Name)
		}
	}
	if !sort.StringsAreSorted(ids) {
		t.Errorf("Titles not sorted: %v", ids)
	}
	if got, want := strings.Join(ids, ","), strings.Join(samples.IDs(), ","); got != want {
		t.Errorf("ids %s, want %s", got, want)
	}

	t1, ok := cat.Title("sample-001")
	if !ok || t1.Package != "basic" || filepath.Base(t1.Path) != "clip-a.ts" {
		t.Errorf("sample-001 = %+v, %v", t1, ok)
	}
	t20, ok := cat.Title("sample-020")
	if !ok || t20.Package != "premium" || filepath.Base(t20.Path) != "clip-b.ts" {
		t.Errorf("sample-020 = %+v, %v", t20, ok)
	}
	if _, ok := cat.Title("sample-021"); ok {
		t.Error("sample-021 found")
	}

	pb := cat.Proto()
	if len(pb) != 20 || pb[0].GetId() != "sample-001" || pb[0].GetSizeBytes() != t1.SizeBytes ||
		pb[0].GetBitrateBps() != t1.BitrateBps || pb[0].GetDurationS() != t1.DurationS ||
		pb[0].GetPackage() != "basic" || pb[0].GetName() != t1.Name {
		t.Errorf("Proto()[0] = %v, title %+v", pb[0], t1)
	}
	pb[0].Id = "changed"
	if cat.Proto()[0].GetId() != "sample-001" {
		t.Error("Proto shares messages with the catalog")
	}
}

func TestLoadCatalogDirectory(t *testing.T) {
	dir := t.TempDir()
	clip := readClip(t, "clip-a.ts")
	for _, name := range []string{"film.one.ts", "Film_2.ts"} {
		if err := os.WriteFile(filepath.Join(dir, name), clip, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Not titles: another extension, a directory named *.ts.
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.ts"), 0o755); err != nil {
		t.Fatal(err)
	}
	cat, err := LoadCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ti := range cat.Titles() {
		ids = append(ids, ti.ID)
		if ti.Package != DefaultPackage || ti.Name != ti.ID || ti.SizeBytes != int64(len(clip)) {
			t.Errorf("title %+v", ti)
		}
	}
	if got := strings.Join(ids, ","); got != "Film_2,film.one" {
		t.Errorf("ids = %s", got)
	}

	empty, err := LoadCatalog(t.TempDir())
	if err != nil || empty.Len() != 0 {
		t.Errorf("empty directory: %v, %v", empty, err)
	}
}

func TestLoadCatalogErrors(t *testing.T) {
	clip := readClip(t, "clip-a.ts")
	noSync := bytes.Repeat([]byte{0x00}, 10*tsindex.PacketSize)
	torn := clip[:len(clip)-100]
	noPCR := make([]byte, 4*tsindex.PacketSize)
	for i := 0; i < len(noPCR); i += tsindex.PacketSize {
		noPCR[i], noPCR[i+1], noPCR[i+2], noPCR[i+3] = 0x47, 0x1f, 0xff, 0x10
	}
	const entryA = "titles:\n  - id: a\n    file: a.ts\n"
	cases := []struct {
		name  string
		files map[string][]byte
		want  []string // substrings of the error
	}{
		{"unknown field", map[string][]byte{"a.ts": clip,
			"catalog.yaml": []byte(entryA + "    bitrate: 5\n")}, []string{"catalog.yaml", "bitrate"}},
		{"unknown top-level key", map[string][]byte{"a.ts": clip,
			"catalog.yaml": []byte(entryA + "title: x\n")}, []string{"title"}},
		{"duplicate id", map[string][]byte{"a.ts": clip,
			"catalog.yaml": []byte(entryA + "  - id: a\n    file: a.ts\n")}, []string{"line 4", `duplicate title id "a"`, "line 2"}},
		{"missing file", map[string][]byte{
			"catalog.yaml": []byte(entryA)}, []string{`title "a"`, "a.ts", "no such file"}},
		{"no file key", map[string][]byte{
			"catalog.yaml": []byte("titles:\n  - id: a\n")}, []string{`title "a" has no file`}},
		{"id with a space", map[string][]byte{"a.ts": clip,
			"catalog.yaml": []byte("titles:\n  - id: a b\n    file: a.ts\n")}, []string{"line 2", "bad title id", `"a b"`}},
		{"id too long", map[string][]byte{"a.ts": clip,
			"catalog.yaml": []byte("titles:\n  - id: " + strings.Repeat("x", 129) + "\n    file: a.ts\n")}, []string{"bad title id", "longer than 128"}},
		{"empty id", map[string][]byte{"a.ts": clip,
			"catalog.yaml": []byte("titles:\n  - file: a.ts\n")}, []string{"bad title id", "empty"}},
		{"bad package", map[string][]byte{"a.ts": clip,
			"catalog.yaml": []byte(entryA + "    package: gold plus\n")}, []string{"bad package"}},
		{"empty document", map[string][]byte{"catalog.yaml": nil}, []string{"empty document"}},
		{"two documents", map[string][]byte{"a.ts": clip,
			"catalog.yaml": []byte(entryA + "---\ntitles: []\n")}, []string{"more than one YAML document"}},
		{"yaml syntax", map[string][]byte{
			"catalog.yaml": []byte("titles: [\n")}, []string{"catalog.yaml"}},
		{"not TS", map[string][]byte{"a.ts": noSync,
			"catalog.yaml": []byte(entryA)}, []string{"a.ts", `title "a"`, "not an MPEG-TS"}},
		{"torn last packet", map[string][]byte{"a.ts": torn,
			"catalog.yaml": []byte(entryA)}, []string{"a.ts", "whole number of 188-byte"}},
		{"empty file", map[string][]byte{"a.ts": nil,
			"catalog.yaml": []byte(entryA)}, []string{"a.ts", "empty file"}},
		{"no PCR", map[string][]byte{"a.ts": noPCR,
			"catalog.yaml": []byte(entryA)}, []string{"a.ts", "fewer than two PCRs"}},
		{"directory: bad id", map[string][]byte{"a b.ts": clip}, []string{"a b.ts", "bad title id"}},
		{"directory: not TS", map[string][]byte{"ok.ts": clip, "junk.ts": []byte("junk\n")}, []string{"junk.ts", "whole number"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cat, err := LoadCatalog(dir)
			if err == nil {
				t.Fatalf("loaded %d titles, want an error", cat.Len())
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}

	if _, err := LoadCatalog(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Error("missing directory loaded")
	}
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCatalog(f); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file as directory: %v", err)
	}
}

func TestLoadCatalogSharedAndAbsoluteFiles(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	clip := readClip(t, "clip-c.ts")
	abs := filepath.Join(other, "c.ts")
	if err := os.WriteFile(abs, clip, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "c.ts"), clip, 0o644); err != nil {
		t.Fatal(err)
	}
	doc := "titles:\n" +
		"  - {id: x, file: c.ts, name: X, package: gold}\n" +
		"  - {id: y, file: ./c.ts}\n" +
		"  - {id: z, file: " + abs + "}\n"
	if err := os.WriteFile(filepath.Join(dir, CatalogFile), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := LoadCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := cat.Title("x")
	y, _ := cat.Title("y")
	z, _ := cat.Title("z")
	if x.Name != "X" || x.Package != "gold" || y.Name != "y" || y.Package != DefaultPackage {
		t.Errorf("x %+v y %+v", x, y)
	}
	if x.Path != y.Path || z.Path != abs {
		t.Errorf("paths %s %s %s", x.Path, y.Path, z.Path)
	}
	if x.SizeBytes != int64(len(clip)) || y.SizeBytes != x.SizeBytes || z.DurationS != x.DurationS {
		t.Errorf("metadata differs: %+v %+v %+v", x, y, z)
	}
	// The version is the bytes': the same for copies of one file, another
	// for a file of the same size whose bytes differ.
	sum := sha256.Sum256(clip)
	if want := hex.EncodeToString(sum[:16]); x.Version != want || y.Version != want || z.Version != want {
		t.Errorf("versions %q %q %q, want %q", x.Version, y.Version, z.Version, want)
	}
	changed := append([]byte(nil), clip...)
	changed[188*100+187] ^= 0xff // one payload byte
	if err := os.WriteFile(abs, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err = LoadCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if z2, _ := cat.Title("z"); z2.SizeBytes != z.SizeBytes || z2.Version == z.Version {
		t.Errorf("a file with one byte changed: %d bytes version %q, was %d bytes version %q", z2.SizeBytes, z2.Version, z.SizeBytes, z.Version)
	}
	if x2, _ := cat.Title("x"); x2.Version != x.Version {
		t.Errorf("version of an unchanged file changed: %q, was %q", x2.Version, x.Version)
	}
}

func TestValidID(t *testing.T) {
	for _, id := range []string{"a", "sample-001", "A.b_c-9", strings.Repeat("z", 128)} {
		if err := ValidID(id); err != nil {
			t.Errorf("ValidID(%q) = %v", id, err)
		}
	}
	for _, id := range []string{"", "a b", "a/b", "../x", "é", "a\n", strings.Repeat("z", 129)} {
		if ValidID(id) == nil {
			t.Errorf("ValidID(%q) = nil", id)
		}
	}
}

func FuzzParseCatalog(f *testing.F) {
	f.Add([]byte("titles:\n  - id: a\n    file: a.ts\n"))
	f.Add([]byte("titles: [{id: a, file: a.ts, package: p, name: n}, {id: b, file: /x.ts}]\n"))
	f.Add([]byte("titles:\n  - id: a\n    file: a.ts\n  - id: a\n    file: b.ts\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("titles: &x [*x]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := parseCatalog(data, "/titles")
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, e := range entries {
			if ValidID(e.ID) != nil || ValidID(e.Package) != nil || seen[e.ID] || e.Path == "" || e.Name == "" {
				t.Fatalf("accepted bad entry %+v", e)
			}
			seen[e.ID] = true
		}
	})
}
