package acm

import (
	"strings"
	"testing"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// TestUserLimitAfterTakeoverSaysSo: the 429 of a subscriber at the
// session cap whose sessions a standby loaded when it took over, their
// node not registered with it since, says "since it took over": it said
// "since it started", of a manager running long before, whose restore
// grace counts from the takeover.
func TestUserLimitAfterTakeoverSaysSo(t *testing.T) {
	open, _ := sharedRedis(t)
	a, b := activeAndStandby(t, open, testTitles, func(m *Manager) { m.MaxSessionsPerUser = 2 })
	n := a.startNode("n1", nodeOpts{})
	a.admitOne("t1")
	a.admitOne("t2")
	n.stop()
	a.m.Close()
	waitFor(t, 20*testLeaderTTL, "B to take the planner lock", b.m.Leader)
	_, body := userLimitAnswer(t, b, "t3")
	for _, want := range []string{"2 of them on a node not registered with this manager since it took over",
		"when a session on a node not registered with this manager since it took over ends."} {
		if !strings.Contains(body, want) {
			t.Errorf("body %q lacks %q", body, want)
		}
	}
	if strings.Contains(body, "since it started") {
		t.Errorf("body %q says since it started, of a manager that took over", body)
	}
	if res := b.describe("demo", "demo", "t3"); res.StatusCode != base.StatusForbidden {
		t.Errorf("RTSP: %d, want 403", res.StatusCode)
	}
}
