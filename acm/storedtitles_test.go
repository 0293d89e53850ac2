package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	pb "vodcluster/proto/vodcluster/v1"
)

// malformedTitles are stored titles no node's store can hold: negative
// bytes, more bytes stored than the title has, an id that is no title id.
func malformedTitles() []*pb.StoredTitle {
	return []*pb.StoredTitle{
		{TitleId: "t2", SizeBytes: -100, StoredBytes: -1_000_000_000_000},
		{TitleId: "t3", SizeBytes: 100, StoredBytes: 1_000_000_000_000_000},
		{TitleId: "bad id", SizeBytes: 188, StoredBytes: 188},
		{TitleId: strings.Repeat("x", 10240), SizeBytes: 188, StoredBytes: 188},
	}
}

// A registration listing a malformed stored title is refused with
// INVALID_ARGUMENT naming it (it was taken, and the title listed as a
// stored copy of negative size); a title of unknown size (0) still
// registers.
func TestRegisterRefusesMalformedStoredTitles(t *testing.T) {
	e := newManager(t, "", nil)
	for _, bad := range malformedTitles() {
		req := regReq("n1", "127.0.0.1:5541", "127.0.0.1:5542", 10*titleBps)
		req.Titles = []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}, bad}
		_, err := e.nc.Register(context.Background(), req)
		if grpcCode(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "stored title") || len(err.Error()) > 400 {
			t.Errorf("register with %.20q stored %d of %d: %v, want INVALID_ARGUMENT naming the stored title (clipped)",
				bad.TitleId, bad.StoredBytes, bad.SizeBytes, err)
		}
	}
	req := regReq("n1", "127.0.0.1:5541", "127.0.0.1:5542", 10*titleBps)
	req.Titles = []*pb.StoredTitle{{TitleId: "t1", StoredBytes: 5000, Filling: true}}
	if _, err := e.nc.Register(context.Background(), req); err != nil {
		t.Fatalf("register with a fill of unknown size: %v", err)
	}
}

// A load report listing malformed stored titles is applied without them:
// they never reach the replica view (vodctl placement listed a stored
// copy of -1e12 bytes), in the report that first lists them or the
// steady ones after.
func TestReportLeavesOutMalformedStoredTitles(t *testing.T) {
	e := newManager(t, "", nil)
	good := &pb.StoredTitle{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}
	n := e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{good}})
	n.mu.Lock()
	n.titles = append([]*pb.StoredTitle{good}, malformedTitles()...)
	n.mu.Unlock()
	before := e.reports("n1")
	waitFor(t, 5*time.Second, "three reports with the malformed titles", func() bool { return e.reports("n1") >= before+3 })
	r, err := e.admin.ListPlacement(context.Background(), &pb.ListPlacementRequest{NodeId: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rep := range r.GetReplicas() {
		got = append(got, rep.GetTitleId())
		if rep.GetStoredBytes() < 0 || rep.GetSizeBytes() < 0 || rep.GetStoredBytes() > rep.GetSizeBytes() {
			t.Errorf("replica %.20q stored %d of %d bytes", rep.GetTitleId(), rep.GetStoredBytes(), rep.GetSizeBytes())
		}
	}
	if len(got) != 1 || got[0] != "t1" {
		t.Errorf("replicas on n1: %.80q, want [t1] alone", got)
	}
	if ni := e.nodeInfo("n1"); ni.GetTitles() != 1 || !ni.GetAlive() {
		t.Errorf("node n1: %d titles, alive %v; want 1 title, alive (its stream kept)", ni.GetTitles(), ni.GetAlive())
	}
}
