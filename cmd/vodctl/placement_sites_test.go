package main

import (
	"context"
	"strings"
	"testing"

	v1 "vodcluster/proto/vodcluster/v1"
)

// sitedAdmin answers ListPlacement with copies on nodes of two sites and
// on one of no site (with a prefetch ordered there).
type sitedAdmin struct{ v1.UnimplementedAdminServer }

func (sitedAdmin) ListPlacement(context.Context, *v1.ListPlacementRequest) (*v1.ListPlacementResponse, error) {
	return &v1.ListPlacementResponse{Replicas: []*v1.Replica{
		{NodeId: "n1", TitleId: "a", StoredBytes: 1000, SizeBytes: 1000, Site: "north"},
		{NodeId: "s1", TitleId: "a", StoredBytes: 10, SizeBytes: 1000, Filling: true, Site: "south"},
		{NodeId: "u1", TitleId: "b", StoredBytes: 1000, SizeBytes: 1000},
		{NodeId: "u1", TitleId: "c", SizeBytes: 1000, Filling: true, State: "ordered"},
	}}, nil
}

// vodctl placement shows each holder's site in a SITE column when a
// holder has one (without, the table is as before: TestPlacementListsPartials),
// and each copy's STATE: the manager's, or from its filling flag when the
// manager gives none.
func TestPlacementShowsSites(t *testing.T) {
	out := runVodctl(t, sitedAdmin{}, "placement")
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		rows = append(rows, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"TITLE NODE STORED(bytes) SIZE(bytes) STATE PINNED STALE SITE",
		"a n1 1000 1000 stored false false north",
		"a s1 10 1000 filling false false south",
		"b u1 1000 1000 stored false false",
		"c u1 0 1000 ordered false false",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("placement:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
	}
}
