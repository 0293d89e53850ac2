package cdp

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	vodclusterv1 "vodcluster/proto/vodcluster/v1"
)

// A title file replaced (written over in place) while a load of the
// directory runs, after the load measured it, is seen as a change by the
// watch, and the next load serves it under its new version: it is not
// served on under the version of the file before, which a fill naming
// the version would be refused forever.
func TestWatchSeesAFileReplacedDuringTheLoad(t *testing.T) {
	s, c := startServer(t, nil) // no watch: the test looks itself
	old1 := mustTitle(t, s.Catalog(), "sample-001")
	changed := append([]byte(nil), readClip(t, "clip-a.ts")...)
	changed[188*50+100] ^= 0xff
	replaced := false
	s.afterLoad = func() {
		if replaced {
			return
		}
		replaced = true
		// Written over in place (cp new.ts clip-a.ts): the directory
		// itself does not change, as it does not for a file renamed
		// over another in a subdirectory or a symbolic link retargeted.
		if err := os.WriteFile(old1.Path, changed, 0o644); err != nil {
			t.Error(err)
		}
		later(t, old1.Path)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if !replaced {
		t.Fatal("the load did not run its hook")
	}
	if v := mustTitle(t, s.Catalog(), "sample-001").Version; v != old1.Version {
		t.Fatalf("sample-001 version %s after a load that measured the file before, want %s", v, old1.Version)
	}
	if _, changedNow := s.dirChanged(); !changedNow {
		t.Fatal("the watch sees no change after a file was replaced during the load: it would never read it again")
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	new1 := mustTitle(t, s.Catalog(), "sample-001")
	if new1.Version == old1.Version {
		t.Fatalf("sample-001 still version %s after the next load", new1.Version)
	}
	got, err := fetch(context.Background(), c, &vodclusterv1.FetchRequest{TitleId: "sample-001", IfVersion: new1.Version}, DefaultChunkBytes)
	if err != nil || !bytes.Equal(got, changed) {
		t.Fatalf("fetch of the replaced file under its new version: %d bytes, %v", len(got), err)
	}
	if _, changedNow := s.dirChanged(); changedNow {
		t.Error("the watch sees a change after the directory was loaded as it is")
	}
}

// A chmod is a change to the watch (a file the origin could not read,
// made readable, is read again), though it changes neither size nor
// modification time.
func TestWatchSeesAModeChange(t *testing.T) {
	s, _ := startServer(t, nil)
	if _, changed := s.dirChanged(); changed {
		t.Fatal("a change seen right after the load")
	}
	p := filepath.Join(s.Dir, "clip-b.ts")
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if st2, err := os.Stat(p); err != nil || !st2.ModTime().Equal(st.ModTime()) {
		t.Fatalf("chmod changed the modification time (%v): the test shows nothing", err)
	}
	if _, changed := s.dirChanged(); !changed {
		t.Error("a chmod of a title file not seen by the watch")
	}
}

// A catalog.yaml gone (the titles become the directory's *.ts files) and
// a catalog that withdraws every title are served, with a warning.
func TestReloadWarnsOfACatalogGoneOrEmpty(t *testing.T) {
	var logs bytes.Buffer
	s, c := startServer(t, func(s *Server) {
		s.Dir = t.TempDir()
		s.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	clip := readClip(t, "clip-a.ts")
	if err := os.WriteFile(filepath.Join(s.Dir, "film.ts"), clip, 0o644); err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(s.Dir, CatalogFile)
	if err := os.WriteFile(doc, []byte("titles:\n  - id: a\n    file: film.ts\n  - id: b\n    file: film.ts\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "is gone") || strings.Contains(logs.String(), "withdrawn") {
		t.Fatalf("warnings for a catalog of 2 titles: %s", logs.String())
	}
	if err := os.Remove(doc); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if ids := listIDs(t, c); len(ids) != 1 || ids["film"] == nil {
		t.Fatalf("titles without catalog.yaml: %v, want film", ids)
	}
	if !strings.Contains(logs.String(), "catalog.yaml is gone") || !strings.Contains(logs.String(), "removed=2") {
		t.Fatalf("logs after catalog.yaml was removed: %q", logs.String())
	}
	logs.Reset()
	if err := os.WriteFile(doc, []byte("titles: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if ids := listIDs(t, c); len(ids) != 0 {
		t.Fatalf("titles of an empty catalog: %v", ids)
	}
	if !strings.Contains(logs.String(), "catalog is empty: every title withdrawn") || !strings.Contains(logs.String(), "removed=1") {
		t.Fatalf("logs after an empty catalog: %q", logs.String())
	}
}
