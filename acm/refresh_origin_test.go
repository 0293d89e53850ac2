package acm

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"vodcluster/cdp"
	"vodcluster/cdp/samples"
	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// Admin.RefreshCatalog has the origin (the real one, cdp.Server) look at
// its title directory before it reads the catalog: a title the operator
// just copied and added to catalog.yaml is published by the refresh at
// once, where it answered "published 0" until the origin's next poll (up
// to two catalog_poll_intervals later; an hour here). A change the origin
// refuses (an entry naming a file not there) is answered as the origin's
// error, naming the file and the line, and logged by the manager; once
// fixed, the next refresh says nothing of it and the log says it is over.
func TestRefreshCatalogHasTheOriginLook(t *testing.T) {
	dir := t.TempDir()
	if err := samples.WriteTo(dir); err != nil {
		t.Fatal(err)
	}
	origin := &cdp.Server{Dir: dir, Listen: "127.0.0.1:0", CatalogPoll: time.Hour, Logger: slog.New(slog.DiscardHandler)}
	if err := origin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { origin.Close() })
	var log logtest.Buffer
	e := newManagerWith(t, "", nil, func(m *Manager) {
		m.OriginAddr, m.CatalogRefresh = origin.Addr(), time.Hour
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	waitFor(t, 10*time.Second, "the origin's catalog", func() bool { return len(e.m.titles()) == 20 })
	ctx := context.Background()

	docPath := filepath.Join(dir, cdp.CatalogFile)
	good, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	clip, err := os.ReadFile(filepath.Join(dir, "clip-a.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "new-release.ts"), clip, 0o644); err != nil {
		t.Fatal(err)
	}
	published := string(good) + "  - id: new-release\n    name: New Release\n    file: new-release.ts\n    package: premium\n"
	if err := os.WriteFile(docPath, []byte(published), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := e.admin.RefreshCatalog(ctx, &pb.RefreshCatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.GetPublished(), []string{"new-release"}) || r.GetTitles() != 21 || r.GetOriginCatalogRefused() != "" ||
		r.OriginCheckedDirectory == nil || !r.GetOriginCheckedDirectory() {
		t.Fatalf("refresh right after publishing: %v; want new-release published, the directory checked", r)
	}

	broken := published + "  - id: missing\n    file: missing.ts\n"
	if err := os.WriteFile(docPath, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err = e.admin.RefreshCatalog(ctx, &pb.RefreshCatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s: line %d: title \"missing\": file %s", docPath, strings.Count(broken, "\n")-1, filepath.Join(dir, "missing.ts"))
	if !strings.Contains(r.GetOriginCatalogRefused(), want) || r.GetTitles() != 21 || len(r.GetPublished())+len(r.GetWithdrawn()) != 0 {
		t.Fatalf("refresh of a catalog the origin refused: %v; want its refusal, containing %q, with the 21 titles before", r, want)
	}
	if l := log.String(); !strings.Contains(l, `msg="catalog: the origin refused its changed catalog: it serves the titles it loaded before`) ||
		!strings.Contains(l, "missing.ts") {
		t.Fatalf("manager log after the refusal:\n%s", l)
	}

	if err := os.WriteFile(docPath, []byte(published), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err = e.admin.RefreshCatalog(ctx, &pb.RefreshCatalogRequest{})
	if err != nil || r.GetOriginCatalogRefused() != "" || r.GetTitles() != 21 {
		t.Fatalf("refresh of the fixed catalog: %v, %v; want no refusal", r, err)
	}
	if l := log.String(); !strings.Contains(l, `msg="catalog: the origin serves its title directory again`) {
		t.Fatalf("manager log after the fix:\n%s", l)
	}
}
