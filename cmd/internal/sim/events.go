package sim

import "container/heap"

type evKind uint8

const (
	evResume    evKind = iota + 1 // a viewer cut off by a node failure asks again; a = resume index
	evEnd                         // a session ends; a = session, gen
	evPatience                    // a viewer waiting for a channel gives up; a = session, gen
	evFillFirst                   // a fill's first bytes reach the node; a = fill
	evFillDone                    // a fill completes; a = fill
	evDeadline                    // the earliest deadline of the lsm queue
	evFail                        // a node fails; a = outage
	evReturn                      // it returns; a = outage
	evSample                      // load sample
	evPlan                        // planner round
)

type event struct {
	t    float64
	seq  uint64
	kind evKind
	gen  uint32
	a    int32
}

// events is a min-heap on (t, seq): simultaneous events run in the order
// they were scheduled, so runs repeat exactly.
type events struct {
	h   evHeap
	seq uint64
}

func (e *events) push(t float64, kind evKind, a int32, gen uint32) {
	e.seq++
	heap.Push(&e.h, event{t: t, seq: e.seq, kind: kind, a: a, gen: gen})
}

func (e *events) len() int { return len(e.h) }

func (e *events) peek() float64 { return e.h[0].t }

func (e *events) pop() event { return heap.Pop(&e.h).(event) }

type evHeap []event

func (h evHeap) Len() int { return len(h) }
func (h evHeap) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].seq < h[j].seq
}
func (h evHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *evHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *evHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
