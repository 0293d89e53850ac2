package main

import (
	"context"
	"strings"
	"testing"
	"time"

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
		"TITLE NODE STORED SIZE STATE PINNED STALE SITE",
		"a n1 1.00 kB 1.00 kB stored false false north",
		"a s1 10 B 1.00 kB filling false false south",
		"b u1 1.00 kB 1.00 kB stored false false",
		"c u1 0 B 1.00 kB ordered false false",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("placement:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
	}
}

// PINNED says "kept until" for a copy an operator's prefetch filled that
// no pin protects, the time as the suspensions' UNTIL shows one (UTC, RFC
// 3339; it was local time as "2027-01-05 04:00:00 UTC"); a pin says true,
// as before.
func TestPinnedColumnShowsAKeep(t *testing.T) {
	until := time.Date(2027, 1, 5, 4, 0, 0, 0, time.UTC).UnixMilli()
	for _, c := range []struct {
		r    *v1.Replica
		want string
	}{
		{&v1.Replica{KeptUntilUnixMs: until}, "kept until 2027-01-05T04:00:00Z"},
		{&v1.Replica{Pinned: true, KeptUntilUnixMs: until}, "true"},
		{&v1.Replica{}, "false"},
	} {
		if got := pinnedCol(c.r); got != c.want {
			t.Errorf("pinnedCol(%v) = %q, want %q", c.r, got, c.want)
		}
	}
}
