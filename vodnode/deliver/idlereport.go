package deliver

import "time"

// idleReportLocked makes an RTP stream that sends nothing for now (paused
// by a PAUSE, at a Range's end, rewound to the start, or parked waiting
// for its title's fill) send its sender report every Engine.SRInterval
// until it plays again (the pacer sends them with the packets then),
// ends, or has reached the end of its title (its BYE sent). Each maps the
// wall clock now to where the stream stands: the RTP time of its position
// (the next byte's, which its packets go on from; a seek into the part
// not filled yet, the time RTP-Info answered), standing still while it
// sends nothing, as ESStream's reports do (reportLoop has why players
// need them). Over TCP a report the connection's writer cannot take at
// once (busy writing a response, or its queue full) stays due, as
// ESStream's do: the next packet sends it if the stream goes on first,
// else the timer tries again idleReportRetry later, with the report made
// anew then (the NTP time of its sending). s.mu held.
func (s *Stream) idleReportLocked() {
	if s.cfg.Mode == RawUDP || s.idleTimer != nil {
		return
	}
	s.idleTimer = time.AfterFunc(s.e.SRInterval, s.idleReport)
}

func (s *Stream) idleReport() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idleTimer = nil
	idx, complete, err := s.cfg.Source.State()
	switch {
	case s.state == statePlaying && s.parked:
	case s.state == statePaused && !(err == nil && complete && s.pos >= idx.Size):
	default:
		return // playing, ended, or at the end of the title
	}
	next := s.e.SRInterval
	if ck := s.clock(idx, complete); s.packets > 0 && s.haveClock0 && ck.ok() {
		rtpTime := s.rtpTime(ck, s.pos)
		if s.seekTo >= 0 {
			rtpTime = s.seekRTP // not started there yet: it stands where RTP-Info put it
		}
		if !s.sendControl(s.report(rtpTime)) {
			// Dropped (the writer busy or full): due still, so that the
			// next packet takes it, else the timer again soon.
			s.nextSR = max(1, s.e.now())
			next = min(next, idleReportRetry)
		}
	}
	s.idleTimer = time.AfterFunc(next, s.idleReport)
}

// idleReportRetry is how soon a stream that sends nothing tries again a
// sender report the connection's writer could not take at once.
const idleReportRetry = 50 * time.Millisecond

// stopIdleReportLocked stops the idle reports of a stream that ends, so
// that its timer does not keep it in memory until it fires. s.mu held.
func (s *Stream) stopIdleReportLocked() {
	if s.idleTimer != nil {
		s.idleTimer.Stop()
		s.idleTimer = nil
	}
}
