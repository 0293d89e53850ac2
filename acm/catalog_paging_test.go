package acm

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// A catalog too large for one gRPC message (the default 4 MB receive
// limit: about 40,000 titles) is read from the origin a page at a time
// and served to vodctl the same way: the manager admits to its last
// title, and Admin.ListTitles lists every title in id order.
func TestLargeCatalogPaged(t *testing.T) {
	const n = 50_000
	long := strings.Repeat("x", 60)
	titles := make([]*pb.Title, n)
	for i := range titles {
		titles[i] = &pb.Title{Id: fmt.Sprintf("t%06d", i), Name: fmt.Sprintf("Title %d %s", i, long),
			DurationS: 20, BitrateBps: titleBps, SizeBytes: 1_500_000, Package: "kids"}
	}
	e := newManagerWith(t, "", titles, nil)
	ctx := context.Background()
	if _, err := e.origin.ListTitles(ctx, &pb.ListTitlesRequest{PageSize: -1}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("page_size -1: %v, want InvalidArgument", err)
	}
	waitFor(t, 10*time.Second, "the catalog", func() bool { return len(e.m.titles()) == n })

	if _, err := e.admin.ListTitles(ctx, &pb.ListTitlesRequest{}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("the whole catalog in one answer: %v, want it past the 4 MB receive limit (the test's premise)", err)
	}
	all, err := pb.ListAllTitles(ctx, e.admin.ListTitles)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != n || all[0].GetId() != "t000000" || all[n-1].GetId() != fmt.Sprintf("t%06d", n-1) {
		t.Fatalf("%d titles listed, want %d from t000000", len(all), n)
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].GetId() >= all[i].GetId() {
			t.Fatalf("titles %d and %d out of order: %s, %s", i-1, i, all[i-1].GetId(), all[i].GetId())
		}
	}
	res, err := e.admin.ListTitles(ctx, &pb.ListTitlesRequest{PageSize: 2, PageToken: "t000100"})
	if err != nil || len(res.GetTitles()) != 2 || res.GetTitles()[0].GetId() != "t000101" || res.GetNextPageToken() != "t000102" {
		t.Fatalf("page of 2 after t000100: %v, %v; want t000101, t000102 and a next page", res, err)
	}
	if _, err := e.admin.ListTitles(ctx, &pb.ListTitlesRequest{PageSize: -1}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Admin page_size -1: %v, want InvalidArgument", err)
	}
}

// Admin.RefreshCatalog reads the origin's catalog at once and says what
// changed: titles published, withdrawn and replaced there; with the
// origin away it is UNAVAILABLE and the catalog before stays.
func TestAdminRefreshCatalog(t *testing.T) {
	e := newManagerWith(t, "", versioned(testTitles, "v1"), nil)
	ctx := context.Background()
	e.origin.mu.Lock()
	titles := versioned(testTitles, "v1")
	titles[0].Version = "v2" // replaced
	titles = append(titles[:len(titles)-1:len(titles)-1], &pb.Title{Id: "zz-new", Name: "New", DurationS: 20, BitrateBps: 600_000, SizeBytes: 1_500_000, Package: "kids"})
	e.origin.titles = titles
	e.origin.mu.Unlock()
	r, err := e.admin.RefreshCatalog(ctx, &pb.RefreshCatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r.GetTitles() != int32(len(testTitles)) || !slices.Equal(r.GetPublished(), []string{"zz-new"}) ||
		!slices.Equal(r.GetWithdrawn(), []string{testTitles[len(testTitles)-1].GetId()}) ||
		!slices.Equal(r.GetReplaced(), []string{testTitles[0].GetId()}) {
		t.Fatalf("refresh: %v", r)
	}
	// The fake origin predates check_directory: the answer says it did
	// not look (vodctl then says a change may not be in the read).
	if r.OriginCheckedDirectory == nil || r.GetOriginCheckedDirectory() || r.GetOriginCatalogRefused() != "" {
		t.Fatalf("refresh from an origin that predates check_directory: %v; want origin_checked_directory false, no refusal", r)
	}
	if _, ok := e.m.titles()["zz-new"]; !ok {
		t.Fatal("the published title is not in the manager's catalog after the refresh")
	}
	e.origin.srv.Stop()
	if _, err := e.admin.RefreshCatalog(ctx, &pb.RefreshCatalogRequest{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("refresh with the origin away: %v, want UNAVAILABLE", err)
	}
	if _, ok := e.m.titles()["zz-new"]; !ok || len(e.m.titles()) != len(testTitles) {
		t.Fatal("a failed refresh changed the catalog")
	}
}

// A refresh during a copy at the origin (its title directory kept
// changing while it looked: directory_changing) answers
// origin_directory_changing and logs a warning: the change is not in the
// read.
func TestAdminRefreshCatalogOriginDirectoryChanging(t *testing.T) {
	var log logtest.Buffer
	e := newManagerWith(t, "", versioned(testTitles, "v1"), func(m *Manager) { m.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	e.origin.mu.Lock()
	e.origin.changing = true
	e.origin.mu.Unlock()
	r, err := e.admin.RefreshCatalog(context.Background(), &pb.RefreshCatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.GetOriginDirectoryChanging() {
		t.Fatalf("refresh while the origin's directory changes: %v; want origin_directory_changing", r)
	}
	if l := log.String(); !strings.Contains(l, "the origin's title directory is still changing") {
		t.Fatalf("manager log:\n%s", l)
	}
}

// Admin.RefreshCatalog on a manager with no origin (OriginAddr empty) is
// FAILED_PRECONDITION saying so, and the manager serves on: it crashed
// (a nil origin connection dereferenced), taking the front door down,
// for `vodctl titles --refresh`. ListTitles on it says has_catalog with
// catalog_read_unix_ms 0 (never read: no origin to read).
func TestAdminRefreshCatalogNoOrigin(t *testing.T) {
	e := newManagerWith(t, "", nil, func(m *Manager) { m.OriginAddr = "" })
	ctx := context.Background()
	_, err := e.admin.RefreshCatalog(ctx, &pb.RefreshCatalogRequest{})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "no origin") {
		t.Fatalf("refresh with no origin: %v, want FailedPrecondition saying no origin", err)
	}
	r, err := e.admin.ListTitles(ctx, &pb.ListTitlesRequest{})
	if err != nil {
		t.Fatalf("the manager after the refresh: %v", err)
	}
	if r.HasCatalog == nil || !r.GetHasCatalog() || r.CatalogReadUnixMs == nil || r.GetCatalogReadUnixMs() != 0 || len(r.GetTitles()) != 0 {
		t.Fatalf("titles of a manager with no origin: %v", r)
	}
}
