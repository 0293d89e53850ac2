package smm

import (
	"math"
	"time"
)

// Popularity keeps, per title, a request count and an exponentially
// decayed request rate (requests per second, half-life HalfLife). Not safe
// for concurrent use.
type Popularity struct {
	HalfLife time.Duration // decay half-life; 0 means one hour
	titles   map[string]*pop
}

type pop struct {
	count int64
	rate  float64 // decayed request count (multiply by ln2/HalfLife for req/s)
	at    time.Time
}

// NewPopularity returns an empty tracker with the given half-life.
func NewPopularity(halfLife time.Duration) *Popularity {
	if halfLife <= 0 {
		halfLife = time.Hour
	}
	return &Popularity{HalfLife: halfLife, titles: map[string]*pop{}}
}

func (p *Popularity) decay(x *pop, now time.Time) {
	if dt := now.Sub(x.at); dt > 0 {
		x.rate *= math.Exp2(-dt.Seconds() / p.HalfLife.Seconds())
		x.at = now
	}
}

// Observe counts one request for title at now.
func (p *Popularity) Observe(title string, now time.Time) {
	x := p.titles[title]
	if x == nil {
		x = &pop{at: now}
		p.titles[title] = x
	}
	p.decay(x, now)
	x.rate++
	x.count++
}

// Count returns the number of requests seen for title.
func (p *Popularity) Count(title string) int64 {
	if x := p.titles[title]; x != nil {
		return x.count
	}
	return 0
}

// Rate returns title's decayed request rate at now, in requests per second.
func (p *Popularity) Rate(title string, now time.Time) float64 {
	x := p.titles[title]
	if x == nil {
		return 0
	}
	p.decay(x, now)
	return x.rate * math.Ln2 / p.HalfLife.Seconds()
}
