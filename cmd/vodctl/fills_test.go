package main

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "vodcluster/proto/vodcluster/v1"
)

// fillsAdmin answers ListFills with a fill in progress, one in backoff
// past its next try whose node keeps a partial of it, one queued with
// none, and one in backoff before its next try.
type fillsAdmin struct{ v1.UnimplementedAdminServer }

func (fillsAdmin) ListFills(context.Context, *v1.ListFillsRequest) (*v1.ListFillsResponse, error) {
	return &v1.ListFillsResponse{Fills: []*v1.Fill{
		{NodeId: "n1", TitleId: "a", State: "filling", StoredBytes: 500, SizeBytes: 1000},
		{NodeId: "n1", TitleId: "b", State: "backoff", StoredBytes: 250, SizeBytes: 1000, Prefetch: true, Attempts: 1, NextTryUnixMs: 1},
		{NodeId: "n2", TitleId: "c", State: "queued", SizeBytes: 1000, Prefetch: true},
		{NodeId: "n2", TitleId: "d", State: "backoff", SizeBytes: 1000, Prefetch: true, Attempts: 2, NextTryUnixMs: time.Now().Add(time.Hour).UnixMilli()},
	}}, nil
}

// vodctl fills shows the bytes a fill not in progress resumes from (the
// node's partial) as "NN% kept", and "-" when there are none.
func TestFillsShowKeptBytes(t *testing.T) {
	out := runVodctl(t, fillsAdmin{}, "fills")
	rows := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(l)
		rows[f[1]] = f
	}
	if r := rows["a"]; len(r) < 5 || r[3] != "50%" || r[4] != "500" {
		t.Errorf("filling: %v", r)
	}
	if r := rows["b"]; len(r) < 6 || r[2] != "backoff" || r[3] != "25%" || r[4] != "kept" || r[5] != "250" {
		t.Errorf("backoff with a partial: %v", r)
	}
	// A retry whose time has passed (the origin does not answer, or no
	// channel is free) is due, not shown at a time in the past.
	if r := rows["b"]; r[len(r)-1] != "due" {
		t.Errorf("backoff past its next try: %v, want NEXT TRY due", r)
	}
	if r := rows["d"]; len(r) < 4 || r[len(r)-3] != time.Now().Add(time.Hour).Format("2006-01-02") {
		t.Errorf("backoff before its next try: %v, want the time of the try", r)
	}
	if r := rows["c"]; len(r) < 5 || r[2] != "queued" || r[3] != "-" || r[4] != "0" {
		t.Errorf("queued without a partial: %v", r)
	}
	if t.Failed() {
		t.Log(out)
	}
}

// waitAdmin answers ListFills with no fill and a first plan waiting for
// two nodes.
type waitAdmin struct {
	v1.UnimplementedAdminServer
	until time.Time
}

func (a waitAdmin) ListFills(context.Context, *v1.ListFillsRequest) (*v1.ListFillsResponse, error) {
	return &v1.ListFillsResponse{PlanWaitsFor: []string{"n2", "n3"}, PlanWaitsUntilUnixMs: a.until.UnixMilli()}, nil
}

// vodctl fills says why nothing is prefetched after a restart: the nodes
// the first plan waits for, until when, and what to do about a node that
// is gone.
func TestFillsShowThePlanWaiting(t *testing.T) {
	until := time.Now().Add(2 * time.Minute)
	out := runVodctl(t, waitAdmin{until: until}, "fills")
	for _, want := range []string{"waits for the nodes of its restored plan to register: n2, n3", until.Format("15:04:05"), "vodctl node forget ID"} {
		if !strings.Contains(out, want) {
			t.Errorf("vodctl fills lacks %q:\n%s", want, out)
		}
	}
}
