package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	v1 "vodcluster/proto/vodcluster/v1"
)

// popularityAdmin answers ListPopularity with two of three titles (one of
// them filtered by title), and records the requests it was sent.
type popularityAdmin struct {
	v1.UnimplementedAdminServer
	mu   sync.Mutex
	reqs []*v1.ListPopularityRequest
}

var popularitySaved = time.Date(2027, 3, 1, 20, 15, 0, 0, time.UTC)

func (a *popularityAdmin) ListPopularity(_ context.Context, r *v1.ListPopularityRequest) (*v1.ListPopularityResponse, error) {
	a.mu.Lock()
	a.reqs = append(a.reqs, r)
	a.mu.Unlock()
	all := []*v1.TitlePopularity{
		{TitleId: "hot", Rank: 1, RequestsPerHour: 208.333, ValueRequestsPerHour: 208.333, MeanSessionS: 10, DemandBps: 347_222,
			PeakDemandBps: 694_444, CatalogPopularityPerDay: 5000, PlannedReplicas: 2, PlannedNodes: []string{"n1", "n2"}, CompleteCopies: 1},
		{TitleId: "t2", Rank: 2, RequestsPerHour: 1.386, ValueRequestsPerHour: 0.173, MeanSessionS: 10, DemandBps: 2310,
			PeakDemandBps: 4620, PlannedReplicas: 1, PlannedNodes: []string{"n1"}, CompleteCopies: 1, Pinned: true},
	}
	switch r.TitleId {
	case "":
	case "t2":
		all = all[1:]
	case "cold": // in the catalog, never requested
		all = []*v1.TitlePopularity{{TitleId: "cold", MeanSessionS: 10}}
	default:
		return nil, status.Errorf(codes.NotFound, "title %q is not in the catalog, the storage planner knows nothing of it and no node holds it", r.TitleId)
	}
	return &v1.ListPopularityResponse{Titles: all, Total: 3, HalfLifeS: 3 * 3600, ValueHalfLifeS: 24 * 3600,
		DemandBps: 350_000, PeakDemandBps: 700_000, SavedUnixMs: popularitySaved.UnixMilli()}, nil
}

// vodctl popularity prints the learnt popularity as a table, the most
// demanded first: rates per hour, demand in bit/s with its unit, the catalog's hint
// ("-" for none), the plan's replicas and nodes ("-" for none), the
// complete copies; then how many titles were left out and the cluster's
// demand, the half-lives and the snapshot's times.
func TestPopularityTable(t *testing.T) {
	a := &popularityAdmin{}
	out := runVodctl(t, a, "popularity")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	fields := func(l string) string { return strings.Join(strings.Fields(l), " ") }
	want := []string{
		"RANK TITLE REQ/H DEMAND PEAK SESSION(s) HINT/DAY REPLICAS PLANNED ON COMPLETE PINNED",
		"1 hot 208.33 347 kbit/s 694 kbit/s 10 5000 2 n1,n2 1 false",
		"2 t2 1.39 2.31 kbit/s 4.62 kbit/s 10 - 1 n1 1 true",
		"2 of 3 titles (--limit 3 for more)",
	}
	if len(lines) < len(want)+2 {
		t.Fatalf("vodctl popularity:\n%s", out)
	}
	for i, w := range want {
		if got := fields(lines[i]); got != w {
			t.Errorf("line %d: %q, want %q", i+1, got, w)
		}
	}
	last := lines[len(lines)-1]
	for _, w := range []string{"cluster demand 350 kbit/s now, remembered peak 700 kbit/s", "half-life 3h (long memory 1d)",
		"none restored", "last saved " + unixMs(popularitySaved.UnixMilli())} {
		if !strings.Contains(last, w) {
			t.Errorf("last line %q lacks %q", last, w)
		}
	}
	if len(a.reqs) != 1 || a.reqs[0].TitleId != "" || a.reqs[0].Limit != 0 {
		t.Errorf("requests %v, want one with no title and no limit (the manager's default)", a.reqs)
	}
}

// vodctl popularity TITLE asks for that title alone and shows its rank;
// one the planner knows nothing of has no rank ("-"); --limit is sent as
// given; an unknown title is the manager's NOT_FOUND, vodctl failing.
func TestPopularityOfOneTitle(t *testing.T) {
	a := &popularityAdmin{}
	out := runVodctl(t, a, "popularity", "t2", "--limit", "5")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 || !strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "2 t2 1.39 ") || strings.Contains(out, "titles (--limit") {
		t.Errorf("vodctl popularity t2:\n%s", out)
	}
	if len(a.reqs) != 1 || a.reqs[0].TitleId != "t2" || a.reqs[0].Limit != 5 {
		t.Errorf("requests %v, want one for t2 with limit 5", a.reqs)
	}
	out = runVodctl(t, a, "popularity", "cold")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) < 2 || strings.Join(strings.Fields(lines[1]), " ") != "- cold 0.00 0 bit/s 0 bit/s 10 - 0 - 0 false" {
		t.Errorf("vodctl popularity cold:\n%s", out)
	}
	out = runVodctlFails(t, a, "popularity", "nope")
	if !strings.HasPrefix(out, `title "nope" is not in the catalog`) || !strings.HasSuffix(strings.TrimSpace(out), "[NOT_FOUND]") {
		t.Errorf("vodctl popularity nope:\n%s", out)
	}
}

// A negative --limit is refused before any call, and two titles too.
func TestPopularityBadArguments(t *testing.T) {
	a := &popularityAdmin{}
	if out := runVodctlFails(t, a, "popularity", "--limit", "-1"); !strings.Contains(out, "--limit -1: want 0") {
		t.Errorf("vodctl popularity --limit -1:\n%s", out)
	}
	if out := runVodctlFails(t, a, "popularity", "a", "b"); !strings.Contains(out, "takes at most 1 argument") {
		t.Errorf("vodctl popularity a b:\n%s", out)
	}
	if len(a.reqs) != 0 {
		t.Errorf("%d calls made, want none", len(a.reqs))
	}
}

// vodctl --json popularity prints the answer's fields in lowerCamelCase,
// the figures as numbers.
func TestPopularityJSON(t *testing.T) {
	out := runVodctl(t, &popularityAdmin{}, "--json", "popularity")
	var r struct {
		Titles []struct {
			TitleID                 string   `json:"titleId"`
			RequestsPerHour         float64  `json:"requestsPerHour"`
			DemandBps               float64  `json:"demandBps"`
			CatalogPopularityPerDay float64  `json:"catalogPopularityPerDay"`
			PlannedNodes            []string `json:"plannedNodes"`
		} `json:"titles"`
		Total       int   `json:"total"`
		SavedUnixMs int64 `json:"savedUnixMs"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(r.Titles) != 2 || r.Titles[0].TitleID != "hot" || r.Titles[0].RequestsPerHour != 208.333 || r.Titles[0].DemandBps != 347_222 ||
		r.Titles[0].CatalogPopularityPerDay != 5000 || len(r.Titles[0].PlannedNodes) != 2 || r.Total != 3 || r.SavedUnixMs != popularitySaved.UnixMilli() {
		t.Errorf("vodctl --json popularity:\n%s", out)
	}
}
