package acm

import (
	"fmt"
	"testing"
	"time"
)

// Every refusal carries the Retry-After its cause calls for, and the RTSP
// and HTTP front doors take it from the one place: a refusal the client
// caused, or one only the operator ends, carries none.
func TestRefusalRetryAfter(t *testing.T) {
	m := &Manager{QueueDeadline: 2500 * time.Millisecond, OriginCheck: 2 * time.Second}
	for _, c := range []struct {
		err  error
		want string
	}{
		{errUnauthorized, ""},
		{tokenRefused{reason: "expired"}, ""},
		{errTokenTitle, ""},
		{errEndedByOperator, ""},
		{errSuspended, ""},
		{errForbidden, ""},
		{errUserLimit, ""},
		{retryLater{err: errUserLimit, wait: 4100 * time.Millisecond}, "5"},
		{errNoTitle, ""},
		{rangeRefused{size: 10}, ""},
		{errOverEgress, ""},
		{fmt.Errorf("node n1: %w", errOverEgress), ""},
		{retryLater{err: errThrottled, wait: 2200 * time.Millisecond}, "3"},
		{retryLater{err: errRateLimited, wait: 10 * time.Millisecond}, "1"},
		{errNoNodeReporting, "3"},
		{errNoNodeInService, "3"},
		{nodesOutOfTouch{nodes: 2}, "3"},
		{errNoDiskRoom, "3"},
		{errNoSource, "3"},
		{errOriginBusy, "3"},
		{errNoBandwidth, "3"},
		{errOriginDown, "6"},
		{errNoCatalog, "5"},
		{errStoreDown, "5"},
		{errStoreTimeout, "5"},
		{errBOSSDown, "5"},
		{fmt.Errorf("something else"), "5"},
	} {
		if got := m.refusalRetryAfter(c.err); got != c.want {
			t.Errorf("Retry-After of %q: %q, want %q", c.err, got, c.want)
		}
	}
	// A queue deadline under a second still says 1.
	m.QueueDeadline = 0
	if got := m.refusalRetryAfter(errNoBandwidth); got != "1" {
		t.Errorf("Retry-After with no queue deadline: %q, want 1", got)
	}
}
