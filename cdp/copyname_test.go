package cdp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	vodclusterv1 "vodcluster/proto/vodcluster/v1"
)

// copyNames are names copy tools give a file while they write it, to
// rename it into place once whole: rsync's temporary file, a hidden copy
// renamed by mv, a download's or an editor's.
var copyNames = []string{".film.ts", ".film.ts.Xa12bC", "film.ts.part", "film.ts.tmp", "film.ts.partial", "film.ts~", "film.part.ts~", "film.TMP"}

// A title directory without catalog.yaml lists no file with a copy's
// temporary name (a hidden *.ts file: rsync's, or cp's before mv), even
// one that is whole MPEG-TS: a copy that stalls for longer than the origin's
// settle time is not published cut short.
func TestLoadCatalogDirectorySkipsCopyNames(t *testing.T) {
	dir := t.TempDir()
	clip := readClip(t, "clip-a.ts")
	for _, name := range append([]string{"film.ts"}, copyNames...) {
		if err := os.WriteFile(filepath.Join(dir, name), clip, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := LoadCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ti := range cat.Titles() {
		ids = append(ids, ti.ID)
	}
	if got := strings.Join(ids, ","); got != "film" {
		t.Errorf("titles %s, want only film: not the copies in progress %v", got, copyNames)
	}
}

// A catalog.yaml entry naming a file with a copy's temporary name is
// refused, the error naming the line, the title and the rule, even when
// the file is there and whole.
func TestLoadCatalogRefusesCopyNames(t *testing.T) {
	clip := readClip(t, "clip-a.ts")
	for _, name := range append(copyNames, filepath.Join("sub", ".film.ts")) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"ok.ts", name} {
				if err := os.WriteFile(filepath.Join(dir, f), clip, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			doc := "titles:\n  - id: ok\n    file: ok.ts\n  - id: film\n    file: " + name + "\n"
			if err := os.WriteFile(filepath.Join(dir, CatalogFile), []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			cat, err := LoadCatalog(dir)
			if err == nil {
				t.Fatalf("loaded %d titles, want the entry naming %s refused", cat.Len(), name)
			}
			for _, w := range []string{"line 4", `title "film"`, "file " + name, "copy tools", "renamed"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// A running origin on a directory without catalog.yaml, asked to check
// it while a title is copied in under a hidden name and the copy stalls,
// does not publish the part copied; once the copy is whole and renamed
// into place, the next check publishes it whole.
func TestCheckDirectoryIgnoresHiddenCopy(t *testing.T) {
	dir := t.TempDir()
	clip := readClip(t, "clip-a.ts")
	if err := os.WriteFile(filepath.Join(dir, "film.ts"), clip, 0o644); err != nil {
		t.Fatal(err)
	}
	s, c := startServer(t, func(s *Server) {
		s.Dir = dir
		s.CatalogPoll = time.Hour
		s.checkSettle = time.Millisecond
	})
	ctx := context.Background()
	check := func() map[string]*vodclusterv1.Title {
		t.Helper()
		r, err := c.ListTitles(ctx, &vodclusterv1.ListTitlesRequest{CheckDirectory: true})
		if err != nil {
			t.Fatal(err)
		}
		if r.GetCatalogRefused() != "" {
			t.Fatalf("refused: %s", r.GetCatalogRefused())
		}
		out := map[string]*vodclusterv1.Title{}
		for _, ti := range r.GetTitles() {
			out[ti.GetId()] = ti
		}
		return out
	}

	// The copy has stalled after 1000 packets: whole MPEG-TS, cut short.
	tmp := filepath.Join(dir, ".stall.ts")
	if err := os.WriteFile(tmp, clip[:188000], 0o644); err != nil {
		t.Fatal(err)
	}
	if got := check(); len(got) != 1 || got["film"] == nil {
		t.Fatalf("titles during the copy: %v, want only film (not the copy .stall.ts)", keys(got))
	}
	if err := os.WriteFile(tmp, clip, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "stall.ts")); err != nil {
		t.Fatal(err)
	}
	got := check()
	if len(got) != 2 || got["stall"] == nil || got["stall"].GetSizeBytes() != int64(len(clip)) {
		t.Fatalf("titles after the rename: %v, want film and stall, whole (%d bytes)", keys(got), len(clip))
	}
	if st := s.Stats(); st.CatalogReloads != 1 {
		t.Errorf("stats %+v: want one load, the rename's", st)
	}
}

func keys(m map[string]*vodclusterv1.Title) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
