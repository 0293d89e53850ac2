package acm

import (
	"net/http"
	"slices"
	"testing"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestIdleSessionKeptForARefusedRequest: a request of a subscriber at the
// session limit that is refused for a reason of its own (the origin down
// and no node holding its title: 503) does not end the subscriber's idle
// session: the paused viewer keeps it. Once the request can be served,
// it supersedes the idle session as before.
func TestIdleSessionKeptForARefusedRequest(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.MaxSessionsPerUser = 1 })
	n := e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}})
	code, h1 := e.httpAdmit("t1")
	if code != http.StatusFound {
		t.Fatalf("HTTP t1: %d", code)
	}
	if err := n.event(h1, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	n.setIdle(h1, 90)
	e.awaitReports("n1")
	e.m.originDown.Store(true)
	if code, _ := e.httpAdmit("adult-1"); code != http.StatusServiceUnavailable {
		t.Fatalf("origin down, adult-1 on no node: %d, want 503", code)
	}
	if got := e.sessionIDs(); !slices.Equal(got, []string{h1}) {
		t.Fatalf("after a refused request: sessions %v, want the idle %s kept", got, h1)
	}
	e.m.originDown.Store(false)
	code, h2 := e.httpAdmit("adult-1")
	if code != http.StatusFound {
		t.Fatalf("origin back: %d, want 302 (the idle session superseded)", code)
	}
	if got := e.sessionIDs(); !slices.Equal(got, []string{h2}) {
		t.Fatalf("sessions %v, want %s alone", got, h2)
	}
}
