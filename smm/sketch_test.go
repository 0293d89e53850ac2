package smm

import (
	"strconv"
	"testing"
	"time"
)

// The sketch grows with the titles a W-TinyLFU holds: fixed at 16,384
// counters a row, a disk of 100,000 titles gave a title never asked for
// an estimate of about 4 (every counter shared by about six titles), as
// frequent as a title asked for four times. The counts of the titles held
// survive the growth.
func TestWTinyLFUSketchGrowsWithTheTitles(t *testing.T) {
	w := NewWTinyLFU()
	t0 := time.Unix(1_000_000, 0)
	for range 5 {
		w.Record("hot", 1<<30, t0)
	}
	const n = 100_000
	for i := range n {
		w.Record("t"+strconv.Itoa(i), 1<<30, t0)
	}
	if got := w.sketch.width(); got < n {
		t.Fatalf("sketch %d counters a row for %d titles held", got, len(w.ents))
	}
	if got := w.Frequency("hot"); got < 5 {
		t.Fatalf("a title asked for 5 times estimated %d after the sketch grew", got)
	}
	sum := 0
	for i := range 1000 {
		sum += w.Frequency("never-asked-" + strconv.Itoa(i))
	}
	if mean := float64(sum) / 1000; mean >= 1 {
		t.Fatalf("titles never asked for estimated %.2f on average, want below 1", mean)
	}
}
