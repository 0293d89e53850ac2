package acm

import (
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// admissionObserved reads the admissions observed with outcome: their
// count and the sum of their durations, seconds.
func admissionObserved(outcome string) (uint64, float64) {
	var m dto.Metric
	if err := admissionSeconds.WithLabelValues(outcome).(prometheus.Metric).Write(&m); err != nil {
		panic(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

// The admission's duration, its wait in the queue included, is exported
// by outcome: an operator sees how long viewers wait for a node
// (vodcluster_admission_duration_seconds), not only how many are refused.
// A request granted at once counts well under the queue deadline; one
// refused after waiting it out counts at least the deadline.
func TestAdmissionDurationObserved(t *testing.T) {
	const deadline = 300 * time.Millisecond
	e := newManager(t, "", func(m *Manager) { m.QueueDeadline = deadline })
	e.startNode("n1", nodeOpts{egress: titleBps}) // room for one viewer
	admitted0, admittedSum0 := admissionObserved(outcomeAdmitted)
	refused0, refusedSum0 := admissionObserved(outcomeNoCapacity)

	e.admitOne("t1")
	if res := e.describe("demo", "demo", "t2"); res.StatusCode != base.StatusNotEnoughBandwidth {
		t.Fatalf("second viewer on a full node: %d", res.StatusCode)
	}
	admitted, admittedSum := admissionObserved(outcomeAdmitted)
	refused, refusedSum := admissionObserved(outcomeNoCapacity)
	if admitted-admitted0 != 1 || admittedSum-admittedSum0 >= deadline.Seconds() {
		t.Errorf("admitted: %d observed, %.3f s", admitted-admitted0, admittedSum-admittedSum0)
	}
	if refused-refused0 != 1 || refusedSum-refusedSum0 < deadline.Seconds() {
		t.Errorf("no_capacity: %d observed, %.3f s (queue deadline %v)", refused-refused0, refusedSum-refusedSum0, deadline)
	}
}

// The histogram's buckets reach past any queue_deadline an operator is
// likely to set (up to a minute), so a long deadline's refusals are told
// apart from each other rather than all counted in +Inf.
func TestAdmissionDurationBucketsCoverLongDeadlines(t *testing.T) {
	var m dto.Metric
	if err := admissionSeconds.WithLabelValues(outcomeAdmitted).(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	b := m.GetHistogram().GetBucket()
	if len(b) == 0 {
		t.Fatal("no buckets")
	}
	if b[0].GetUpperBound() > 0.001 {
		t.Errorf("lowest bucket %v s, want <= 1 ms (an admission granted at once)", b[0].GetUpperBound())
	}
	if top := b[len(b)-1].GetUpperBound(); top < 60 {
		t.Errorf("highest finite bucket %v s, want >= 60 s (a 30 s or 1 min queue_deadline)", top)
	}
}
