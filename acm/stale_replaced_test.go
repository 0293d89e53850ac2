package acm

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "vodcluster/proto/vodcluster/v1"
)

// setOriginVersion makes the test origin serve title id as version v
// (its file replaced there).
func (e *env) setOriginVersion(id, v string) {
	e.origin.mu.Lock()
	defer e.origin.mu.Unlock()
	for i, ti := range e.origin.titles {
		if ti.GetId() == id {
			c := proto.CloneOf(ti)
			c.Version = v
			e.origin.titles[i] = c
		}
	}
}

// A title replaced at the origin takes no new viewer on a node's copy of
// the old version from the catalog read that finds it replaced on, not
// from the node's next report: n1 holds t1 v1 (a viewer plays it), the
// origin now serves v2, and the viewer admitted right after the read
// goes to n2 (a fill of v2). Between the read and n1's next report (up
// to a heartbeat) new viewers were sent to the old version; the report
// then found the copy stale only once a second read confirmed it (a
// second or more). The copy stays stale at the reports that follow.
func TestReplacedTitleStaleFromTheCatalogRead(t *testing.T) {
	e := newManagerWith(t, "", versioned(testTitles, "v1"), nil)
	e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001", egress: 20 * titleBps, titles: []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000, Version: "v1", Sessions: 1},
	}})
	e.startNode("n2", nodeOpts{rtsp: "127.0.0.1:7002", egress: 20 * titleBps})
	if sid := e.admitOne("t1"); e.session(sid).GetNodeId() != "n1" {
		t.Fatalf("before the replacement: %+v, want on n1 (it holds t1)", e.session(sid))
	}

	e.setOriginVersion("t1", "v2")
	change, err := e.m.readCatalog(context.Background(), 10*time.Second, false)
	if err != nil || len(change.replaced) != 1 {
		t.Fatalf("catalog read: %+v %v", change, err)
	}
	if sid := e.admitOne("t1"); e.session(sid).GetNodeId() != "n2" {
		t.Fatalf("right after the read: %+v, want on n2 (n1's copy is of the old version)", e.session(sid))
	}
	for range 3 {
		e.nextReport("n1")
	}
	if sid := e.admitOne("t1"); e.session(sid).GetNodeId() != "n2" {
		t.Fatalf("after n1's next reports: %+v, want on n2", e.session(sid))
	}
}
