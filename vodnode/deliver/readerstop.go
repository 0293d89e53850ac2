package deliver

import "time"

// readerStop is how long a stream waited for a player that stopped
// reading (Stream.readerStopped): the stop under way since from (zero:
// none) and the stops that ended, total. Guarded by the stream's mu.
type readerStop struct {
	from  time.Time
	total time.Duration
}

// readerStoppedLocked marks s waiting for a player that stopped reading
// since from (mu held); a stop under way goes on.
func (s *Stream) readerStoppedLocked(from time.Time) {
	if !s.readerStopped.Load() {
		s.stop.from = from
	}
	s.readerStopped.Store(true)
}

// readerBackLocked ends the wait for a player that stopped reading, if
// any, at at (mu held): it reads again, or the stream no longer plays
// (a PAUSE, its end).
func (s *Stream) readerBackLocked(at time.Time) {
	if s.readerStopped.Load() {
		s.stop.total += max(0, at.Sub(s.stop.from))
		s.stop.from = time.Time{}
	}
	s.readerStopped.Store(false)
}

// ReaderStoppedFor returns how long the stream, playing over TCP, waited
// for a player that stopped reading without a PAUSE (ReaderStopped), up
// to end: from when the first byte it could not send was due to when the
// connection took a send again, or the stream was paused, ended or
// played again; a wait under way is counted to end (none of it when end
// is before its start).
func (s *Stream) ReaderStoppedFor(end time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.stop.total
	if s.readerStopped.Load() && !s.stop.from.IsZero() {
		d += max(0, end.Sub(s.stop.from))
	}
	return d
}

// wall is engine time ns (Engine.now) as wall time.
func (e *Engine) wall(ns int64) time.Time { return e.epoch.Add(time.Duration(ns)) }
