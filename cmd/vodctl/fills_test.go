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
	if r := rows["d"]; len(r) < 4 || !strings.HasPrefix(r[len(r)-1], time.Now().Add(time.Hour).UTC().Format("2006-01-02T")) || !strings.HasSuffix(r[len(r)-1], "Z") {
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
	for _, want := range []string{"waits for the nodes of its restored plan to register: n2, n3", "(until " + until.UTC().Format(time.RFC3339) + " at most", "vodctl node forget ID"} {
		if !strings.Contains(out, want) {
			t.Errorf("vodctl fills lacks %q:\n%s", want, out)
		}
	}
}

// retryAdmin answers ListFills with fills their node retries through an
// outage of the origin: the next attempt in an hour, under way, and due
// since the node's last report.
type retryAdmin struct{ v1.UnimplementedAdminServer }

func (retryAdmin) ListFills(context.Context, *v1.ListFillsRequest) (*v1.ListFillsResponse, error) {
	return &v1.ListFillsResponse{Fills: []*v1.Fill{
		{NodeId: "n1", TitleId: "a", State: "origin retry", SizeBytes: 1000, Attempts: 7,
			NextTryUnixMs: time.Now().Add(time.Hour).UnixMilli(), OriginError: "rpc error: code = Unavailable desc = connection refused"},
		{NodeId: "n2", TitleId: "b", State: "origin retry", StoredBytes: 100, SizeBytes: 1000, Attempts: 2, OriginError: "origin transfer stalled"},
		{NodeId: "n2", TitleId: "c", State: "origin retry", SizeBytes: 1000, Attempts: 3, NextTryUnixMs: 1, OriginError: "origin transfer stalled"},
	}}, nil
}

// vodctl fills shows a fill retried through an outage of the origin as
// such, with the node's attempts and next try ("now" while one is under
// way), and each one's last failure below the table: the outage showed
// as a fill at 0% with no attempt.
func TestFillsShowOriginRetries(t *testing.T) {
	out := runVodctl(t, retryAdmin{}, "fills")
	lines := strings.Split(out, "\n")
	row := func(title string) string {
		for _, l := range lines[1:] {
			if f := strings.Fields(l); len(f) > 1 && f[0] != "" && f[1] == title {
				return l
			}
		}
		return ""
	}
	if r := strings.Fields(row("a")); len(r) < 12 || r[2] != "origin" || r[3] != "retry" || r[4] != "0%" || r[5]+" "+r[6] != "0 B" || r[7]+" "+r[8] != "1.00 kB" || r[10] != "7" || !strings.HasPrefix(r[11], time.Now().Add(time.Hour).UTC().Format("2006-01-02T")) {
		t.Errorf("a fill retried, its next try in an hour: %v", r)
	}
	if r := strings.Fields(row("b")); len(r) < 12 || r[4] != "10%" || r[5]+" "+r[6] != "100 B" || r[10] != "2" || r[11] != "now" {
		t.Errorf("a fill whose retry is under way: %v", r)
	}
	// Its time passed since the node's last report: it read "due", a
	// backoff's word for a retry the planner holds back.
	if r := strings.Fields(row("c")); len(r) < 12 || r[11] != "now" {
		t.Errorf("a fill whose retry is due: %v", r)
	}
	for _, want := range []string{"n1 a: rpc error: code = Unavailable desc = connection refused", "n2 b: origin transfer stalled"} {
		if !strings.Contains(out, "\n"+want+"\n") {
			t.Errorf("no line %q", want)
		}
	}
	if t.Failed() {
		t.Log(out)
	}
}

// unknownUserAdmin answers ListSessions with no session, its subscriber
// unknown to the users file.
type unknownUserAdmin struct{ v1.UnimplementedAdminServer }

func (unknownUserAdmin) ListSessions(context.Context, *v1.ListSessionsRequest) (*v1.ListSessionsResponse, error) {
	return &v1.ListSessionsResponse{UserUnknown: true}, nil
}

// vodctl sessions --user of a subscriber the users file does not know
// says so under its empty table: it printed the table alone, as for a
// subscriber with nothing playing.
func TestSessionsOfAnUnknownUserWarn(t *testing.T) {
	out := runVodctl(t, unknownUserAdmin{}, "sessions", "--user", "alcie")
	if !strings.Contains(out, `warning: the users file has no subscriber "alcie" (check the name)`) {
		t.Errorf("vodctl sessions --user alcie:\n%s", out)
	}
}
