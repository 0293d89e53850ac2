package main

import (
	"context"
	"strings"
	"testing"

	v1 "vodcluster/proto/vodcluster/v1"
)

// titlesAdmin answers ListTitles with one title and counts RefreshCatalog
// calls.
type titlesAdmin struct {
	v1.UnimplementedAdminServer
	refreshed *int
}

func (a titlesAdmin) RefreshCatalog(context.Context, *v1.RefreshCatalogRequest) (*v1.RefreshCatalogResponse, error) {
	*a.refreshed++
	return &v1.RefreshCatalogResponse{Titles: 1, Published: []string{"premiere"}, Withdrawn: []string{"old-1", "old-2"}}, nil
}

func (titlesAdmin) ListTitles(context.Context, *v1.ListTitlesRequest) (*v1.ListTitlesResponse, error) {
	return &v1.ListTitlesResponse{Titles: []*v1.Title{{Id: "premiere", Name: "Premiere", Package: "basic", DurationS: 20, BitrateBps: 600_000, SizeBytes: 1_500_000}}}, nil
}

// vodctl titles --refresh has the manager read the origin's catalog first
// and says what changed; without it, no read is asked for.
func TestTitlesRefresh(t *testing.T) {
	var n int
	out := runVodctl(t, titlesAdmin{refreshed: &n}, "titles")
	if n != 0 || strings.Contains(out, "catalog read") || !strings.Contains(out, "premiere") {
		t.Fatalf("titles: %d refreshes, output:\n%s", n, out)
	}
	out = runVodctl(t, titlesAdmin{refreshed: &n}, "titles", "--refresh")
	if n != 1 || !strings.Contains(out, "catalog read from the origin: 1 titles; published 1 [premiere], withdrawn 2 [old-1 old-2], replaced 0 []") ||
		!strings.Contains(out, "Premiere") {
		t.Fatalf("titles --refresh: %d refreshes, output:\n%s", n, out)
	}
}
