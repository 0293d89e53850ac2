package store

import (
	"strings"
	"testing"
	"time"
)

// A fill retried through an outage of its origin says so in its Status
// (the node's report, vodctl fills' "origin retry"): how many transfers
// failed since the origin last answered, the next attempt and the last
// failure's cause; none once the fill completes after the outage. It read
// as filling with nothing to tell the outage.
func TestFillRetriesShownInStatus(t *testing.T) {
	data := sample(t)
	o := newFlakyOrigin(map[string][]byte{"t1": data}, 0)
	o.down.Store(true)
	s, tt := openAcquire(t, Config{Dir: t.TempDir(), Origin: startOrigin(t, o),
		Retry: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond, RetryFor: 20 * time.Second}, "t1")
	// The origin refuses a transfer before the store counts it: once the
	// fourth is refused, the store has counted the first three.
	for i := range 4 {
		select {
		case <-o.refused:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d refused transfers", i)
		}
	}
	st, _ := statusOf(s, "t1")
	if !st.Filling || st.OriginRetries < 3 || !strings.Contains(st.OriginError, "origin restarting (test)") {
		t.Fatalf("during the outage: %+v, want filling with at least 3 origin retries and the cause", st)
	}
	if !st.OriginRetryAt.IsZero() && st.OriginRetryAt.After(time.Now().Add(time.Second)) {
		t.Errorf("next attempt at %v, want within the backoff's 50 ms", st.OriginRetryAt)
	}
	o.down.Store(false)
	waitComplete(t, tt)
	if st, _ := statusOf(s, "t1"); st.OriginRetries != 0 || st.OriginError != "" || !st.OriginRetryAt.IsZero() {
		t.Errorf("after the outage: %+v, want no origin retry", st)
	}
}
