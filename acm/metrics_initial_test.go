package acm

import (
	"fmt"
	"strings"
	"testing"
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
