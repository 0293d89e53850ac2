package acm

import (
	"testing"

	pb "vodcluster/proto/vodcluster/v1"
)

// ListSessions (vodctl sessions) shows a playing session paused when its
// node reports its RTSP client PAUSEd it, finished when its node reports
// it played to the end of the title (finished first when both), and
// playing when the node reports neither, as an older node does; an
// admitted session (not at its node yet) stays admitted whatever the
// report says.
func TestListSessionsShowsPausedAndFinished(t *testing.T) {
	e := newManager(t, "", nil)
	n := e.startNode("n1", nodeOpts{})
	a, b, c := e.admitOne("t1"), e.admitOne("t2"), e.admitOne("t3")
	for _, sid := range []string{a, b} {
		if err := n.event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
			t.Fatal(err)
		}
	}
	states := func() map[string]string {
		out := map[string]string{}
		for _, s := range e.sessions() {
			out[s.SessionId] = s.State
		}
		return out
	}
	set := func(paused, finished []string) {
		n.mu.Lock()
		n.paused, n.finished = paused, finished
		n.mu.Unlock()
		at := e.reports("n1")
		waitFor(t, 0, "the node's next report", func() bool { return e.reports("n1") > at+1 })
	}
	if s := states(); s[a] != "playing" || s[b] != "playing" || s[c] != "admitted" {
		t.Fatalf("no report of pauses (an older node): %v", s)
	}
	set([]string{a, c}, []string{b})
	if s := states(); s[a] != "paused" || s[b] != "finished" || s[c] != "admitted" {
		t.Fatalf("a paused, b finished, c admitted: %v", s)
	}
	set([]string{b}, []string{b})
	if s := states(); s[a] != "playing" || s[b] != "finished" {
		t.Fatalf("a played again, b paused at the end: %v", s)
	}
	set(nil, nil)
	if s := states(); s[a] != "playing" || s[b] != "playing" {
		t.Fatalf("both played again: %v", s)
	}
}
