package acm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// The labelled series whose label values are known in advance are on
// /metrics at the manager's start, before any request, refusal or
// session record: the alerting rules' rate() and increase() over them
// give 0 rather than no data, and absent() does not fire. Each series is
// looked for by its exact label set (labels in the exposition's order).
func TestMetricsLabelledSeriesBeforeFirstEvent(t *testing.T) {
	e := newManager(t, "", withMetrics)
	text := scrape(t, e.m)
	var want []string
	for _, p := range frontDoorProtocols {
		for _, o := range requestOutcomes {
			want = append(want, fmt.Sprintf(`vodcluster_frontdoor_requests_total{outcome=%q,protocol=%q}`, o, p))
		}
		want = append(want,
			fmt.Sprintf(`vodcluster_superseded_sessions_total{protocol=%q}`, p),
			fmt.Sprintf(`vodcluster_session_reuses_total{protocol=%q}`, p),
			fmt.Sprintf(`vodcluster_frontdoor_connections_refused_total{listener=%q}`, p))
	}
	for _, o := range admissionOutcomes {
		want = append(want, fmt.Sprintf(`vodcluster_admission_duration_seconds_count{outcome=%q}`, o))
	}
	for _, r := range sessionRecordResults {
		want = append(want, fmt.Sprintf(`vodcluster_session_records_total{result=%q}`, r))
	}
	// The lists above are checked against the outcomes documented in
	// the counters' help, so a new outcome is not left out of them.
	for _, o := range []string{"admitted", "challenged", "unauthorized", "forbidden", "suspended", "user_limit",
		"unknown_title", "no_capacity", "origin_down", "throttled", "rate_limited", "unavailable", "client_gone"} {
		if !strings.Contains(text, fmt.Sprintf(`vodcluster_frontdoor_requests_total{outcome=%q,protocol="rtsp"}`, o)) {
			t.Errorf("outcome %s not among requestOutcomes", o)
		}
	}
	lines := strings.Split(text, "\n")
	for _, w := range want {
		found := false
		for _, l := range lines {
			// The value is not checked: the counters are global to the
			// test binary, and another test may have counted in them
			// (run alone, each is 0).
			if strings.HasPrefix(l, w+" ") {
				found = true
			}
		}
		if !found {
			t.Errorf("%s missing from /metrics before its first event", w)
		}
	}
}

// Every refusal the front door or an admission can answer is counted
// under an outcome created at start: the no-node, no-source, drained,
// over-egress, disk-room and origin-busy refusals under no_capacity, the
// store's under unavailable, a token for another title and the
// operator's end under forbidden; so a rule over no_capacity sees them,
// and none opens a series of its own after start. The admission
// histogram's outcomes are among the front door's.
func TestMetricsOutcomeOfEveryRefusalPreCreated(t *testing.T) {
	in := func(list []string, o string) bool { return slices.Contains(list, o) }
	for err, want := range map[error]string{
		nil: outcomeAdmitted, errChallenge: outcomeChallenged, errUnauthorized: outcomeUnauthorized,
		errForbidden: outcomeForbidden, errTokenTitle: outcomeForbidden, errEndedByOperator: outcomeForbidden,
		errSuspended: outcomeSuspended, errUserLimit: outcomeUserLimit, errNoTitle: outcomeUnknownTitle,
		rangeRefused{size: 1}: outcomeBadRange,
		errNoBandwidth:        outcomeNoCapacity, errNoNodeReporting: outcomeNoCapacity, errNoSource: outcomeNoCapacity,
		errNoNodeInService: outcomeNoCapacity, errOverEgress: outcomeNoCapacity, errNoDiskRoom: outcomeNoCapacity,
		errOriginBusy: outcomeNoCapacity, nodesOutOfTouch{nodes: 1}: outcomeNoCapacity, errOriginDown: outcomeOriginDown,
		retryLater{errThrottled, time.Second}: outcomeThrottled, retryLater{errRateLimited, time.Second}: outcomeRateLimited,
		errUnavailable: outcomeUnavailable, errStoreTimeout: outcomeUnavailable, errStoreDown: outcomeUnavailable,
		errNoCatalog: outcomeUnavailable, context.Canceled: outcomeClientGone, context.DeadlineExceeded: outcomeClientGone,
	} {
		if got := outcome(err); got != want || !in(requestOutcomes, got) {
			t.Errorf("outcome(%v) = %q, want %q, created at start: %v", err, got, want, in(requestOutcomes, got))
		}
	}
	for _, o := range admissionOutcomes {
		if !in(requestOutcomes, o) {
			t.Errorf("admission outcome %q is not a front-door outcome", o)
		}
	}
}
