package acm

import (
	"maps"
	"testing"
	"time"

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
	// set has the node report paused and finished from its next report
	// on, and waits (at most waitForMin) for the listing to show want: a
	// report counted is no proof, since reports taken before set may
	// still be on their way when the manager lags behind under load.
	set := func(paused, finished []string, want map[string]string) {
		t.Helper()
		n.mu.Lock()
		n.paused, n.finished = paused, finished
		n.mu.Unlock()
		var got map[string]string
		for end := time.Now().Add(waitForMin); ; time.Sleep(10 * time.Millisecond) {
			if got = states(); maps.Equal(got, want) {
				return
			}
			if time.Now().After(end) {
				t.Fatalf("paused %v, finished %v: listed %v, want %v", paused, finished, got, want)
			}
		}
	}
	if s := states(); s[a] != "playing" || s[b] != "playing" || s[c] != "admitted" {
		t.Fatalf("no report of pauses (an older node): %v", s)
	}
	// a paused, b finished, c admitted (not at its node: stays admitted).
	set([]string{a, c}, []string{b}, map[string]string{a: "paused", b: "finished", c: "admitted"})
	// a played again, b paused at the end: finished.
	set([]string{b}, []string{b}, map[string]string{a: "playing", b: "finished", c: "admitted"})
	// Both played again.
	set(nil, nil, map[string]string{a: "playing", b: "playing", c: "admitted"})
}
