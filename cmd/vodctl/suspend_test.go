package main

import (
	"context"
	"strings"
	"sync"
	"testing"

	v1 "vodcluster/proto/vodcluster/v1"
)

// suspendAdmin records the suspensions asked for.
type suspendAdmin struct {
	v1.UnimplementedAdminServer
	mu   sync.Mutex
	reqs []*v1.SuspendRequest
}

func (a *suspendAdmin) SuspendSubscriber(_ context.Context, r *v1.SuspendRequest) (*v1.Suspension, error) {
	a.mu.Lock()
	a.reqs = append(a.reqs, r)
	a.mu.Unlock()
	s := &v1.Suspension{User: r.User, Reason: r.Reason}
	if r.DurationS > 0 {
		s.SinceUnixMs, s.UntilUnixMs = 1_800_000_000_000, 1_800_000_000_000+r.DurationS*1000
		s.UserUnknown = r.User == "alcie"
	}
	return s, nil
}

func (a *suspendAdmin) ListSuspensions(context.Context, *v1.ListSuspensionsRequest) (*v1.ListSuspensionsResponse, error) {
	return &v1.ListSuspensionsResponse{Suspensions: []*v1.Suspension{
		{User: "alice", SinceUnixMs: 1_800_000_000_000, UntilUnixMs: 1_800_086_400_000, Reason: "account shared"},
		{User: "alcie", SinceUnixMs: 1_800_000_000_000, UntilUnixMs: 1_800_003_600_000, UserUnknown: true}}}, nil
}

// vodctl suspend checks its arguments before it calls the manager, sends
// the duration in seconds (0 to lift), and prints what the manager says;
// vodctl suspensions lists them.
func TestSuspend(t *testing.T) {
	fa := &suspendAdmin{}
	run := vodctlAgainst(t, fa)
	for args, want := range map[string]string{
		"suspend alice":                 "give --for DURATION (1s to 366d, a year) or --lift, one of the two",
		"suspend alice --for 1h --lift": "one of the two",
		// Without nested parentheses: it was "(1s to 8784h (366 days), a year)".
		// A --for of 0 read as none: it said to give --for.
		"suspend alice --for 0s":           "--for 0s: at least 1s (--lift ends a suspension)",
		"suspend --for 1h":                 "name one subscriber",
		"suspend alice --for 10ms":         "at least 1s",
		"suspend alice bob --for 1h":       "name one subscriber",
		"suspend alice --for -1h --reason": "flag needs an argument",
		// The manager's refusal named its duration_s, not --for.
		// Echoed as typed, the limit as --for takes it: it was "--for
		// 8785h0m0s: at most 8784h0m0s", then "at most 8784h (366 days)".
		"suspend alice --for 8785h": "--for 8785h: at most 366d, a year",
		"suspend alice --for 367d":  "--for 367d: at most 366d, a year",
		// Past what a duration holds: it said "at most 106751 days".
		"suspend alice --for 99999999d": `"99999999d": at most 366d, a year`,
		"suspend alice --for 90m100d":   `"90m100d": want a duration such as 90s, 30m, 24h, 1h30m or 7d`,
		"suspend alice --for 500ms":     "--for 500ms: at least 1s",
	} {
		if _, err := run(strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("vodctl %s: %v, want %q", args, err, want)
		}
	}
	if len(fa.reqs) != 0 {
		t.Fatalf("calls made for wrong arguments: %v", fa.reqs)
	}
	// A year in days is taken.
	if out, err := run("suspend", "alice", "--for", "366d"); err != nil || !strings.Contains(out, "alice: suspended until") {
		t.Fatalf("suspend --for 366d: %v\n%s", err, out)
	}
	if r := fa.reqs; len(r) != 1 || r[0].DurationS != 366*86400 {
		t.Fatalf("suspend --for 366d asked for %v", r)
	}
	fa.reqs = nil
	out, err := run("suspend", "alice", "--for", "24h", "--reason", "account shared")
	if err != nil || !strings.Contains(out, "alice: suspended until 2027-01-") {
		t.Fatalf("suspend: %v\n%s", err, out)
	}
	if strings.Contains(out, "warning") {
		t.Fatalf("suspend of a known subscriber warns:\n%s", out)
	}
	// A name the users file does not hold (a typo) is suspended all the
	// same, and said to be unknown: it read as the subscriber meant.
	if out, err := run("suspend", "alcie", "--for", "1h"); err != nil || !strings.Contains(out, "alcie: suspended until") ||
		!strings.Contains(out, `warning: the users file has no subscriber "alcie"`) {
		t.Fatalf("suspend of an unknown name: %v\n%s", err, out)
	}
	if out, err := run("suspend", "alice", "--lift"); err != nil || !strings.Contains(out, "alice: suspension lifted") {
		t.Fatalf("lift: %v\n%s", err, out)
	}
	if r := fa.reqs; len(r) != 3 || r[0].DurationS != 86400 || r[0].Reason != "account shared" || r[2].DurationS != 0 {
		t.Fatalf("requests %v", r)
	}
	out, err = run("suspensions")
	if err != nil || !strings.Contains(out, "alice") || !strings.Contains(out, "account shared") {
		t.Fatalf("suspensions: %v\n%s", err, out)
	}
	// The name the users file does not hold is marked in the list, as
	// suspend warns of it; the known one is not.
	for _, line := range strings.Split(out, "\n") {
		if marked := strings.Contains(line, "(not in users file)"); marked != strings.HasPrefix(line, "alcie ") {
			t.Fatalf("suspensions: line %q marked %v\n%s", line, marked, out)
		}
	}
	if out, err := run("--json", "suspensions"); err != nil || !strings.Contains(out, `"userUnknown": true`) {
		t.Fatalf("suspensions --json: %v\n%s", err, out)
	}
}
