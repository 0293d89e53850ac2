package main

import (
	"context"
	"strings"
	"testing"

	v1 "vodcluster/proto/vodcluster/v1"
)

// standbyAdmin answers the lists as a manager without the planner lock
// (standby), or as the active one.
type standbyAdmin struct {
	v1.UnimplementedAdminServer
	standby bool
}

func (a standbyAdmin) ListSessions(context.Context, *v1.ListSessionsRequest) (*v1.ListSessionsResponse, error) {
	return &v1.ListSessionsResponse{Standby: a.standby}, nil
}

func (a standbyAdmin) ListNodes(context.Context, *v1.ListNodesRequest) (*v1.ListNodesResponse, error) {
	return &v1.ListNodesResponse{Standby: a.standby}, nil
}

func (a standbyAdmin) ListFills(context.Context, *v1.ListFillsRequest) (*v1.ListFillsResponse, error) {
	return &v1.ListFillsResponse{Standby: a.standby}, nil
}

// Against the standby of a pair, vodctl sessions, nodes and fills say so
// beside their tables (and their JSON): they printed empty tables, read
// as a cluster without nodes or viewers. Against the active manager
// nothing is added.
func TestStandbyListsNoted(t *testing.T) {
	for _, args := range [][]string{{"sessions"}, {"nodes"}, {"fills"}, {"--json", "sessions"}} {
		out := runVodctl(t, standbyAdmin{standby: true}, args...)
		if !strings.Contains(out, "does not hold the planner lock") || !strings.Contains(out, "ask the active manager") {
			t.Errorf("vodctl %v against a standby:\n%s", args, out)
		}
		if out := runVodctl(t, standbyAdmin{}, args...); strings.Contains(out, "planner lock") {
			t.Errorf("vodctl %v against the active manager:\n%s", args, out)
		}
	}
}
