package store

import "time"

// Failure is one fill that ended without the whole title, or a prefetch
// the node refused, for the next load report.
type Failure struct {
	Title    string
	Reason   string
	Prefetch bool
	At       time.Time
}

// maxFailures bounds the failures kept between two reports.
const maxFailures = 256

// NoteFailure records a fill that did not happen (a prefetch refused
// before it started, say) for the next load report.
func (s *Store) NoteFailure(f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failures) < maxFailures {
		s.failures = append(s.failures, f)
	}
}

// TakeFailures returns the failures recorded since the last call and
// forgets them: each is reported once.
func (s *Store) TakeFailures() []Failure {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.failures
	s.failures = nil
	return f
}
