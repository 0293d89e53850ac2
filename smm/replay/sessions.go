package replay

import (
	"container/heap"
	"fmt"
	"math"
	"time"

	"vodcluster/smm"
	"vodcluster/smm/bound"
)

// RunSessions replays reqs (in time order, each with its session's End)
// through one cache of capacity bytes managed by ev under the residency
// rule of a VOD node: a title stays on the cache while any of its
// sessions plays, as Item.InUse, which no policy may evict. A request for
// a title on the cache is a hit; otherwise it is a fetch of the title's
// bytes and the title is stored after evicting ev's victims (an Admitter
// is not asked: the title must be stored to be streamed). Recorder
// policies hear every request. It fails on a malformed trace, a negative
// capacity, or when ev cannot make room beside the titles in use (the
// trace needs more than capacity at that instant, or ev misbehaves).
func RunSessions(reqs []bound.Request, capacity int64, ev smm.Evictor) (Result, error) {
	if capacity < 0 {
		return Result{}, fmt.Errorf("replay: negative capacity %d", capacity)
	}
	res := Result{Policy: ev.Name(), Requests: len(reqs)}
	rec, _ := ev.(smm.Recorder)
	var items []smm.Item
	idx := map[string]int{}
	users := map[string]int{}
	var used int64
	var ends endHeap
	prev := math.Inf(-1)
	remove := func(title string) {
		i := idx[title]
		used -= items[i].Bytes
		last := len(items) - 1
		items[i] = items[last]
		idx[items[i].Title] = i
		items = items[:last]
		delete(idx, title)
	}
	release := func(upTo float64) {
		for len(ends) > 0 && ends[0].at <= upTo {
			e := heap.Pop(&ends).(sessionEnd)
			if users[e.title]--; users[e.title] == 0 {
				delete(users, e.title)
				if i, ok := idx[e.title]; ok {
					items[i].InUse = false
				}
			}
		}
	}
	for n, r := range reqs {
		end := r.End
		if end == 0 {
			end = r.Time
		}
		if r.Title == "" || r.Bytes <= 0 || math.IsNaN(r.Time) || r.Time < prev || !(end >= r.Time) || math.IsInf(end, 0) {
			return res, fmt.Errorf("replay: request %d: bad %+v", n, r)
		}
		prev = r.Time
		release(r.Time)
		now := epoch.Add(time.Duration(r.Time*1e9) + time.Duration(n))
		if rec != nil {
			rec.Record(r.Title, r.Bytes, now)
		}
		i, ok := idx[r.Title]
		switch {
		case ok && items[i].Bytes == r.Bytes:
			res.Hits++
			items[i].LastAccess = now
			items[i].Hits++
		case ok && items[i].InUse:
			return res, fmt.Errorf("replay: request %d: %q changed size while playing", n, r.Title)
		default:
			if ok {
				remove(r.Title) // the title changed size: a new object
			}
			res.Fetches++
			res.OriginBytes += r.Bytes
			if need := used + r.Bytes - capacity; need > 0 {
				victims, ok := ev.Victims(items, need, now)
				if !ok {
					return res, fmt.Errorf("replay: request %d at %.3f s: %s cannot free %d bytes beside the titles in use", n, r.Time, ev.Name(), need)
				}
				for _, t := range victims {
					j, known := idx[t]
					if !known || items[j].InUse {
						return res, fmt.Errorf("replay: %s evicted %q, not an evictable title", ev.Name(), t)
					}
					remove(t)
					res.Evictions++
				}
			}
			idx[r.Title] = len(items)
			items = append(items, smm.Item{Title: r.Title, Bytes: r.Bytes, LastAccess: now, Hits: 1})
			used += r.Bytes
			i = idx[r.Title]
		}
		if end > r.Time {
			users[r.Title]++
			items[i].InUse = true
			heap.Push(&ends, sessionEnd{end, r.Title})
		}
	}
	return res, nil
}

type sessionEnd struct {
	at    float64
	title string
}

// endHeap is a min-heap of session ends.
type endHeap []sessionEnd

func (h endHeap) Len() int           { return len(h) }
func (h endHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h endHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)        { *h = append(*h, x.(sessionEnd)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Oracle returns a gdsf evictor whose request frequency is each title's
// number of requests in reqs, known in advance: an online policy with
// perfect knowledge of popularity but not of when requests come. What it
// fetches is the part of a policy's distance to the offline bound that no
// better popularity estimate can recover.
func Oracle(reqs []bound.Request) smm.Evictor {
	count := map[string]float64{}
	for _, r := range reqs {
		count[r.Title]++
	}
	g := smm.NewGDSF(smm.DefaultSetupBytes)
	g.Frequency = func(title string, _ time.Time) float64 { return count[title] }
	return oracle{g}
}

// oracle is a GDSF named "oracle" in results.
type oracle struct{ *smm.GDSF }

func (oracle) Name() string { return "gdsf-oracle" }
