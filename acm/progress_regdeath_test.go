package acm

import (
	"testing"
	"time"
)

// TestSessionRecordOfANodeDeadBeforeItsFirstReport: after a power cut
// (the manager and the session's node killed) the next manager starts,
// the node registers with it and dies again before its first load report.
// The registration says nothing of the session: its record ends when the
// first manager last heard of it (its stored progress), not at the
// registration, an outage later.
func TestSessionRecordOfANodeDeadBeforeItsFirstReport(t *testing.T) {
	dir, path, a, cut := powerCut(t)
	e2 := newManager(t, dir, recordsTo(path, time.Second))
	e2.registerOnly("n1") // and no report: it died again
	r := recordOf(t, path)
	if r.Session != a || r.EndedAt.After(cut) || r.EndedAt.Before(r.StartedAt.Time) {
		t.Fatalf("record %+v: want it ended when the first manager last heard of it (before %v), not at the registration", r, cut.UTC())
	}
	if r.BytesSent != 187_654_321 || !r.BytesSentAsOfReport {
		t.Fatalf("record %+v: want bytes_sent 187654321 as of the last report", r)
	}
}
