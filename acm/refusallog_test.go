package acm

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"vodcluster/acm/store"
	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// infoLines returns the lines of a text log above debug.
func infoLines(log string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		if l != "" && !strings.Contains(l, "level=DEBUG") {
			out = append(out, l)
		}
	}
	return out
}

// A burst of capacity refusals logs the first in full and the rest at
// debug, then one line with their count once capacityNote is over (from
// the tick, or from the next refusal); each reason on its own, and a
// refusal after a lull in full again.
func TestCapacityRefusalsCollapsed(t *testing.T) {
	var buf logtest.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var r refusalNotes
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 100 {
		r.log(l, t0.Add(time.Duration(i)*50*time.Millisecond), refusedNoBandwidth, slog.LevelInfo,
			"admission refused: no node could take it within the queue deadline: no node in service has headroom", "user", "demo")
	}
	r.log(l, t0.Add(time.Second), refusedNoDiskRoom, slog.LevelInfo, "admission refused: disk", "user", "demo")
	if got := strings.Count(buf.String(), "level=DEBUG"); got != 99 {
		t.Errorf("%d refusals at debug, want 99:\n%s", got, buf.String())
	}
	lines := infoLines(buf.String())
	if len(lines) != 2 || !strings.Contains(lines[0], "no node in service has headroom") || !strings.Contains(lines[1], "admission refused: disk") {
		t.Fatalf("lines above debug during the burst, want the first of each reason:\n%s", strings.Join(lines, "\n"))
	}
	r.flush(l, t0.Add(capacityNote-time.Millisecond)) // not over yet
	if n := len(infoLines(buf.String())); n != 2 {
		t.Fatalf("%d lines above debug before the window is over", n)
	}
	r.flush(l, t0.Add(capacityNote))
	lines = infoLines(buf.String())
	if len(lines) != 3 || !strings.Contains(lines[2], "refused 99 requests for no bandwidth in the last 10s") ||
		!strings.Contains(lines[2], "level=INFO") || !strings.Contains(lines[2], "refused=99") {
		t.Fatalf("after the window, want one summary with the count of no bandwidth (disk room held none):\n%s", strings.Join(lines, "\n"))
	}
	// The flood goes on: refusals in the next window are summed up by the
	// next refusal after it, with no line of their own.
	for i := range 50 {
		r.log(l, t0.Add(capacityNote+time.Duration(i)*100*time.Millisecond), refusedNoBandwidth, slog.LevelInfo, "admission refused: again", "user", "demo")
	}
	r.log(l, t0.Add(2*capacityNote+2*time.Second), refusedNoBandwidth, slog.LevelInfo, "admission refused: again", "user", "demo")
	lines = infoLines(buf.String())
	if len(lines) != 4 || !strings.Contains(lines[3], "refused 50 requests for no bandwidth in the last 12s") {
		t.Fatalf("want one summary of the next window:\n%s", strings.Join(lines, "\n"))
	}
	// A lull (a window over with nothing held): the next refusal is logged
	// in full, at its level.
	r.flush(l, t0.Add(4*capacityNote)) // sums up the 1 refusal held
	r.flush(l, t0.Add(6*capacityNote)) // an empty window: forgotten
	r.log(l, t0.Add(7*capacityNote), refusedNoNodeInService, slog.LevelWarn, "admission refused at once: drained", "user", "demo")
	r.log(l, t0.Add(7*capacityNote), refusedNoBandwidth, slog.LevelInfo, "admission refused: after the lull", "user", "demo")
	lines = infoLines(buf.String())
	if len(lines) != 7 || !strings.Contains(lines[4], "refused 1 request for") ||
		!strings.Contains(lines[5], "level=WARN") || !strings.Contains(lines[5], "drained") || !strings.Contains(lines[6], "after the lull") {
		t.Fatalf("after a lull, want each refusal in full:\n%s", strings.Join(lines, "\n"))
	}
}

// Refusals while the origin is down (no node holds the title) are
// collapsed as the capacity refusals are: 100 at once log one line above
// debug, and the summary once the window is over carries the count.
func TestOriginDownRefusalsCollapsed(t *testing.T) {
	var buf logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		m.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	e.startNode("n1", nodeOpts{})
	e.settled()
	e.m.originDown.Store(true)
	for i := range 100 {
		_, err := e.m.admit(context.Background(), admitRequest{User: "demo", Title: "t1", ClientIP: "127.0.0.1",
			Client: "127.0.0.1:40000", Protocol: store.ProtoRTSP})
		if !errors.Is(err, errOriginDown) {
			t.Fatalf("request %d: %v, want %v", i, err, errOriginDown)
		}
	}
	above, debug, summary := 0, 0, ""
	count := func() {
		above, debug, summary = 0, 0, ""
		for _, l := range strings.Split(buf.String(), "\n") {
			switch {
			case strings.Contains(l, "for origin unavailable in the last"):
				summary = l
			case !strings.Contains(l, "admission refused: origin unavailable"):
			case strings.Contains(l, "level=DEBUG"):
				debug++
			default:
				above++
			}
		}
	}
	count()
	if above != 1 || debug != 99 {
		t.Fatalf("%d refusals logged above debug, %d at debug; want 1 and 99:\n%s", above, debug, buf.String())
	}
	e.m.capRefusals.flush(e.m.log, e.m.now().Add(capacityNote))
	if count(); !strings.Contains(summary, "refused=99") || strings.Contains(summary, "level=DEBUG") {
		t.Fatalf("the summary %q, want the 99 refusals at debug counted", summary)
	}
}

// The front door's admission logs its capacity refusals so: 100 requests
// refused at once (the only node drained) log one line above debug, and
// the summary once the window is over carries the count.
func TestAdmissionRefusalsCollapsed(t *testing.T) {
	var buf logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		m.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	e.startNode("n1", nodeOpts{})
	e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)})
	e.settled()
	for i := range 100 {
		_, err := e.m.admit(context.Background(), admitRequest{User: "demo", Title: "t1", ClientIP: "127.0.0.1",
			Client: "127.0.0.1:40000", Protocol: store.ProtoRTSP})
		if !errors.Is(err, errNoNodeInService) {
			t.Fatalf("request %d: %v, want %v", i, err, errNoNodeInService)
		}
	}
	refusals := func() (above, debug int, summary string) {
		for _, l := range strings.Split(buf.String(), "\n") {
			switch {
			case strings.Contains(l, "for no node in service in the last"):
				summary = l
			case !strings.Contains(l, "admission refused at once"):
			case strings.Contains(l, "level=DEBUG"):
				debug++
			default:
				above++
			}
		}
		return
	}
	above, debug, _ := refusals()
	if above != 1 || debug != 99 {
		t.Fatalf("%d refusals logged above debug, %d at debug; want 1 and 99:\n%s", above, debug, buf.String())
	}
	e.m.capRefusals.flush(e.m.log, e.m.now().Add(capacityNote))
	if _, _, summary := refusals(); !strings.Contains(summary, "refused=99") {
		t.Fatalf("the summary %q, want the 99 refusals at debug counted", summary)
	}
}
