package cdp

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"vodcluster/proto/logtest"
	vodclusterv1 "vodcluster/proto/vodcluster/v1"
)

// listIDs returns the ids the origin lists over gRPC.
func listIDs(t *testing.T, c vodclusterv1.OriginClient) map[string]*vodclusterv1.Title {
	t.Helper()
	resp, err := c.ListTitles(context.Background(), &vodclusterv1.ListTitlesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*vodclusterv1.Title, len(resp.GetTitles()))
	for _, ti := range resp.GetTitles() {
		out[ti.GetId()] = ti
	}
	return out
}

// later gives path a modification time one second ahead of now, as a
// write some time after the origin's scan would have.
func later(t *testing.T, path string) {
	t.Helper()
	if err := os.Chtimes(path, time.Time{}, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
}

// An operator publishes a title (a new file and its catalog entry),
// withdraws one and replaces the file of a third: after Reload the origin
// lists and serves the new catalog, the replaced title under its new
// version (a fetch resuming the old version is refused), without a
// restart; only the new and changed files are scanned.
func TestReloadPublishesWithdrawsAndReplaces(t *testing.T) {
	s, c := startServer(t, nil)
	dir := s.Dir
	old3, _ := s.Catalog().Title("sample-003")
	clipA, clipC := readClip(t, "clip-a.ts"), readClip(t, "clip-c.ts")

	// A new file, published under a new id; sample-020 withdrawn.
	if err := os.WriteFile(filepath.Join(dir, "new-release.ts"), clipA[:188*2000], 0o644); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(dir, CatalogFile))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(doc, []byte("  - id: sample-020"))
	if i < 0 {
		t.Fatal("sample-020 not in the sample catalog")
	}
	doc = append(doc[:i:i], []byte("  - id: new-release\n    name: New Release\n    file: new-release.ts\n    package: premium\n    popularity: 5000\n")...)
	if err := os.WriteFile(filepath.Join(dir, CatalogFile), doc, 0o644); err != nil {
		t.Fatal(err)
	}
	// sample-003's file (clip-c.ts, shared with 006, 009, ...) replaced.
	changed := append([]byte(nil), clipC...)
	changed[188*50+100] ^= 0xff
	if err := os.WriteFile(old3.Path+".new", changed, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(old3.Path+".new", old3.Path); err != nil {
		t.Fatal(err)
	}
	later(t, old3.Path)

	prev := s.Catalog()
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	titles := listIDs(t, c)
	if _, ok := titles["sample-020"]; ok {
		t.Error("sample-020 still listed after its entry was removed")
	}
	nr, ok := titles["new-release"]
	if !ok || nr.GetSizeBytes() != 188*2000 || nr.GetPackage() != "premium" || nr.GetPopularityPerDay() != 5000 || nr.GetBitrateBps() <= 0 {
		t.Fatalf("new-release listed as %v (listed: %v)", nr, ok)
	}
	if len(titles) != 20 {
		t.Errorf("%d titles listed, want 20", len(titles))
	}
	new3 := titles["sample-003"]
	if new3.GetVersion() == old3.Version || new3.GetVersion() != titles["sample-006"].GetVersion() {
		t.Errorf("sample-003 version %s (was %s), sample-006 %s: want a new one, shared", new3.GetVersion(), old3.Version, titles["sample-006"].GetVersion())
	}
	if titles["sample-001"].GetVersion() != mustTitle(t, prev, "sample-001").Version {
		t.Error("an unchanged file got another version")
	}

	ctx := context.Background()
	got, err := fetch(ctx, c, &vodclusterv1.FetchRequest{TitleId: "new-release", IfVersion: nr.GetVersion()}, DefaultChunkBytes)
	if err != nil || !bytes.Equal(got, clipA[:188*2000]) {
		t.Fatalf("fetch of the new title: %d bytes, %v", len(got), err)
	}
	_, err = fetch(ctx, c, &vodclusterv1.FetchRequest{TitleId: "sample-020"}, DefaultChunkBytes)
	wantCode(t, err, codes.NotFound, `title "sample-020" is not in the origin's catalog`)
	_, err = fetch(ctx, c, &vodclusterv1.FetchRequest{TitleId: "sample-003", Offset: 188, IfVersion: old3.Version}, DefaultChunkBytes)
	wantCode(t, err, codes.FailedPrecondition, "is version "+new3.GetVersion()+" at the origin, not "+old3.Version)
	got, err = fetch(ctx, c, &vodclusterv1.FetchRequest{TitleId: "sample-003", IfVersion: new3.GetVersion()}, DefaultChunkBytes)
	if err != nil || !bytes.Equal(got, changed) {
		t.Fatalf("fetch of the replaced file under its new version: %d bytes, %v", len(got), err)
	}

	// Read again with nothing changed: no file scanned, same catalog.
	again, scanned, err := loadCatalog(dir, s.Catalog(), nil)
	if err != nil || scanned != 0 || again.Len() != 20 {
		t.Errorf("load of an unchanged directory: %d titles, %d files scanned, %v; want 20, 0", again.Len(), scanned, err)
	}
	if st := s.Stats(); st.CatalogReloads != 1 || st.CatalogRefused != 0 || st.CatalogStale {
		t.Errorf("stats %+v: want 1 reload, none refused", st)
	}
}

func mustTitle(t *testing.T, c *Catalog, id string) Title {
	t.Helper()
	ti, ok := c.Title(id)
	if !ok {
		t.Fatalf("%s not in the catalog", id)
	}
	return ti
}

// A catalog that does not load is refused with the reason (naming the
// file's path and line, whether it does not parse or a title's file is
// bad), and the titles loaded before are served on; once it is fixed, it
// loads, and the log says so at info (with no title changed, the reload
// was logged at debug only: the refusal's error stayed the last word).
func TestReloadRefusedKeepsTheCatalog(t *testing.T) {
	var log logtest.Buffer
	s, c := startServer(t, func(s *Server) { s.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	docPath := filepath.Join(s.Dir, CatalogFile)
	good, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf(": line %d: ", bytes.Count(good, []byte("\n"))+1) // the entry appended
	for _, bad := range []struct {
		name, doc, want string
	}{
		{"yaml", "titles:\n  - id: a\n    flie: x.ts\n", "field flie not found in a title"},
		{"bad id", string(good) + "  - id: b@d\n    file: x.ts\n", docPath + line + "bad title id"},
		{"missing file", string(good) + "  - id: missing\n    file: missing.ts\n", docPath + line + `title "missing": file ` + filepath.Join(s.Dir, "missing.ts")},
		{"not MPEG-TS", string(good) + "  - id: junk\n    file: catalog.yaml\n", docPath + line + `title "junk"`},
	} {
		if err := os.WriteFile(docPath, []byte(bad.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		err := s.Reload()
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Fatalf("%s: Reload = %v, want an error containing %q", bad.name, err, bad.want)
		}
		if n := len(listIDs(t, c)); n != 20 {
			t.Fatalf("%s: %d titles served after a refused reload, want the 20 before", bad.name, n)
		}
		if st := s.Stats(); !st.CatalogStale {
			t.Errorf("%s: stats %+v: want stale", bad.name, st)
		}
	}
	if _, err := fetch(context.Background(), c, &vodclusterv1.FetchRequest{TitleId: "sample-001", Length: 188}, DefaultChunkBytes); err != nil {
		t.Fatalf("fetch after refused reloads: %v", err)
	}
	if err := os.WriteFile(docPath, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.CatalogStale || st.CatalogRefused != 4 || st.CatalogReloads != 1 {
		t.Errorf("stats %+v: want 4 refused then 1 loaded, not stale", st)
	}
	if want := `level=INFO msg="catalog reloaded: the directory is accepted again after a refusal"`; !strings.Contains(log.String(), want) {
		t.Errorf("log after the fix: want %q\n%s", want, log.String())
	}
}

// In a directory without catalog.yaml, a title file copied in is found by
// the watch and served once its copy is over (while it is incomplete the
// catalog before is served); a file removed is withdrawn.
func TestWatchFindsACopiedFile(t *testing.T) {
	dir := t.TempDir()
	clipA, clipB := readClip(t, "clip-a.ts"), readClip(t, "clip-b.ts")
	if err := os.WriteFile(filepath.Join(dir, "first.ts"), clipA, 0o644); err != nil {
		t.Fatal(err)
	}
	s, c := startServer(t, func(s *Server) { s.Dir, s.CatalogPoll = dir, 10*time.Millisecond })

	// A copy caught half way: not whole packets.
	f, err := os.Create(filepath.Join(dir, "second.ts"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(clipB[:len(clipB)/2+1]); err != nil {
		t.Fatal(err)
	}
	waitStats(t, s, "the incomplete file refused", func(st Stats) bool { return st.CatalogRefused >= 1 })
	if ids := listIDs(t, c); len(ids) != 1 {
		t.Fatalf("served %d titles while the copy is incomplete, want the 1 before", len(ids))
	}
	if _, err := f.Write(clipB[len(clipB)/2+1:]); err != nil {
		t.Fatal(err)
	}
	waitStats(t, s, "the copied file loaded", func(st Stats) bool { return st.CatalogReloads >= 1 && !st.CatalogStale })
	ids := listIDs(t, c)
	if ti, ok := ids["second"]; len(ids) != 2 || !ok || ti.GetSizeBytes() != int64(len(clipB)) {
		t.Fatalf("after the copy: %v", ids)
	}

	if err := os.Remove(filepath.Join(dir, "first.ts")); err != nil {
		t.Fatal(err)
	}
	waitStats(t, s, "the removed file withdrawn", func(st Stats) bool { return st.CatalogReloads >= 2 })
	if ids := listIDs(t, c); len(ids) != 1 || ids["second"] == nil {
		t.Fatalf("after the removal: %v", ids)
	}
}

// Reload before Start or after Close says so; Close stops the watch.
func TestReloadNotStarted(t *testing.T) {
	s := &Server{Dir: t.TempDir(), Listen: "127.0.0.1:0", Logger: quiet}
	wantCode(t, s.Reload(), codes.Unavailable, "origin not started")
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	wantCode(t, s.Reload(), codes.Unavailable, "origin not started")
}

// GetTitle answers from the catalog in use: a title published after
// start is found once the directory is read again; errors as documented.
func TestGetTitle(t *testing.T) {
	s, c := startServer(t, nil)
	ctx := context.Background()
	ti, err := c.GetTitle(ctx, &vodclusterv1.GetTitleRequest{TitleId: "sample-002"})
	want, _ := s.Catalog().Title("sample-002")
	if err != nil || ti.GetVersion() != want.Version || ti.GetSizeBytes() != want.SizeBytes || ti.GetPackage() != "basic" {
		t.Fatalf("GetTitle(sample-002) = %v, %v; want %+v", ti, err, want)
	}
	_, err = c.GetTitle(ctx, &vodclusterv1.GetTitleRequest{TitleId: "new"})
	wantCode(t, err, codes.NotFound, `title "new" is not in the origin's catalog`)
	_, err = c.GetTitle(ctx, &vodclusterv1.GetTitleRequest{})
	wantCode(t, err, codes.InvalidArgument, "title_id is empty")

	// A file written over in place, not read again yet: UNAVAILABLE.
	ti3, _ := s.Catalog().Title("sample-003")
	changed := readClip(t, "clip-c.ts")
	changed[188*10+100] ^= 0xff
	if err := os.WriteFile(ti3.Path, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	later(t, ti3.Path)
	_, err = c.GetTitle(ctx, &vodclusterv1.GetTitleRequest{TitleId: "sample-003"})
	wantCode(t, err, codes.Unavailable, `title "sample-003": its file changed since the origin loaded its catalog (`)

	clip := readClip(t, "clip-a.ts")
	if err := os.WriteFile(filepath.Join(s.Dir, "new.ts"), clip, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(s.Dir, CatalogFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("  - id: new\n    file: new.ts\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if ti, err := c.GetTitle(ctx, &vodclusterv1.GetTitleRequest{TitleId: "new"}); err != nil || ti.GetSizeBytes() != int64(len(clip)) {
		t.Fatalf("GetTitle(new) after the reload = %v, %v", ti, err)
	}
}
