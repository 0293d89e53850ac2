package deliver

import (
	"context"
	"fmt"
	"time"

	"github.com/pion/rtcp"
)

// reportsLocked returns, per track set up, an RTCP sender report (RFC 3550
// §6.4.1) for now, followed by a BYE (§6.6) with reason bye when bye is
// not empty; s.mu held.
func (s *ESStream) reportsLocked(bye string) [][]byte {
	out := make([][]byte, len(s.tc))
	for i := range out {
		out[i] = s.reportLocked(i, bye)
	}
	return out
}

// reportLocked is reportsLocked for track i: nil when the track was not
// set up, or sent nothing and bye is empty. A track that sent nothing
// starts its BYE with an empty receiver report (§6.1: a compound packet
// starts with a report).
func (s *ESStream) reportLocked(i int, bye string) []byte {
	if !s.track(i) {
		return nil
	}
	var ps []rtcp.Packet
	switch {
	case s.packets[i] > 0:
		now := time.Now()
		rtpNow := s.lastTS[i]
		if s.play != nil {
			if m, ok := s.play.reportNow(now, s.fillWait.Load()); ok {
				rtpNow = s.rtpTime(i, m) // the timeline both tracks are sent on
			} else {
				rtpNow = s.startTS[i] // not started yet: it stands where it starts
			}
		}
		ps = append(ps, &rtcp.SenderReport{SSRC: s.tc[i].SSRC, NTPTime: ntpTime(now), RTPTime: rtpNow,
			PacketCount: s.packets[i], OctetCount: s.octets[i]})
	case bye != "":
		ps = append(ps, &rtcp.ReceiverReport{SSRC: s.tc[i].SSRC})
	default:
		return nil
	}
	if bye != "" {
		ps = append(ps, &rtcp.Goodbye{Sources: []uint32{s.tc[i].SSRC}, Reason: bye})
	}
	b, err := rtcp.Marshal(ps)
	if err != nil {
		return nil
	}
	return b
}

// sendRTCP sends each track's RTCP packet: on the RTCP channel (RTP
// channel + 1) over TCP, to the client's RTCP port over UDP. Over TCP it
// waits for room in the connection's queue when wait is set (the stream's
// own goroutine), else drops what the writer cannot take at once (busy,
// or its queue full). Packets written waiting over TCP were counted in the
// stream's BytesSent as they were made (handOverLocked), and are taken
// back if their write fails. It reports per track whether its packet is
// done with: sent, or lost for good (over TCP a connection that failed
// takes nothing more: its RTSP connection ends the stream; over UDP a
// send that failed); false only for one the writer could not take at
// once, which a retry may send.
func (s *ESStream) sendRTCP(pkts [][]byte, wait bool) (went []bool) {
	went = make([]bool, len(pkts))
	for i, b := range pkts {
		if b == nil {
			continue
		}
		sent := len(b)
		switch s.cfg.Mode {
		case RTPTCP:
			frame := appendFrame(nil, uint8(s.tc[i].Channel+1), b)
			sent = len(frame)
			if wait {
				// Counted in the stream's BytesSent as made
				// (handOverLocked), as a packet is (sendUnit).
				if _, err := s.cfg.Conn.Write(frame); err != nil {
					s.uncount(int64(sent))
				} else {
					s.e.bytesSent.Add(int64(sent))
				}
				went[i] = true // sent, or lost
				continue
			} else if ok, err := s.cfg.Conn.TryWrite(frame); err != nil {
				went[i] = true // lost: a failed connection takes nothing more
				continue
			} else if !ok {
				continue
			}
		case RTPUDP:
			if s.tc[i].RTCP == nil {
				went[i] = true // no RTCP port: nowhere to send
				continue
			}
			if _, err := s.e.UDP.RTCP.WriteTo(b, s.tc[i].RTCP); err != nil {
				went[i] = true // lost, as a datagram may be
				continue
			}
		}
		s.bytes.Add(int64(sent))
		s.e.bytesSent.Add(int64(sent))
		went[i] = true
	}
	return went
}

// sendUnit sends one RTP packet of track u.track, numbered in its
// track's sequence, and the track's sender report when it is due.
// Errors: ErrQueueFull when a TCP connection cannot take it.
func (s *ESStream) sendUnit(u *esUnit) error {
	i, p := u.track, u.pkt
	s.mu.Lock()
	if s.closed {
		// Close or Abort: nothing more is sent (Abort's BYE, made from
		// the counts below, follows the last packet).
		s.mu.Unlock()
		return context.Canceled
	}
	p.SequenceNumber = s.seq[i]
	s.seq[i]++
	s.packets[i]++
	s.octets[i] += uint32(len(p.Payload))
	s.lastTS[i] = p.Timestamp
	p.SSRC = s.tc[i].SSRC
	frameLen := int64(p.MarshalSize() + 4)
	if s.cfg.Mode == RTPTCP {
		// Counted in the stream's BytesSent as it is handed to the
		// writer, with its count above: Abort does not wait for a write
		// held by a busy writer, and the session's end report, read once
		// it returns, has it. The engine's total counts it once written
		// (uncount).
		s.bytes.Add(frameLen)
	}
	s.mu.Unlock()
	b, err := p.Marshal()
	if err != nil {
		if s.cfg.Mode == RTPTCP {
			s.uncount(frameLen) // counted above over TCP only
		}
		return err
	}
	switch s.cfg.Mode {
	case RTPTCP:
		if _, err := s.cfg.Conn.Write(appendFrame(nil, uint8(s.tc[i].Channel), b)); err != nil {
			s.uncount(frameLen)
			if connGone(err) {
				return err // the client hung up
			}
			return fmt.Errorf("%w: %v", ErrQueueFull, err) // held back past the write timeout
		}
		s.e.bytesSent.Add(frameLen)
	case RTPUDP:
		if _, err := s.e.UDP.RTP.WriteTo(b, s.tc[i].Dest); err == nil {
			s.bytes.Add(int64(len(b)))
			s.e.bytesSent.Add(int64(len(b)))
		}
	}
	s.mu.Lock()
	if s.play != nil && s.play.restarted.Swap(false) {
		s.reportAtOnceLocked() // the timeline restarted: the reports before map the old one
	}
	var srs [][]byte
	if now := time.Now(); now.After(s.nextSR[i]) && !s.closed { // Abort's BYE carries the last report
		s.nextSR[i] = now.Add(s.e.SRInterval)
		srs = make([][]byte, len(s.tc))
		srs[i] = s.reportLocked(i, "")
	}
	s.handOverLocked(srs)
	s.mu.Unlock()
	s.sendRTCP(srs, true)
	return nil
}

// handOverLocked counts in the stream's BytesSent, over TCP, the RTCP
// packets pkts that sendRTCP is to write waiting for the connection's
// writer, as they are made: Abort does not wait for the play's goroutine
// writing them, and the session's end report, read once Abort returns,
// has them (a packet's count is taken at the same point, sendUnit).
// s.mu held.
func (s *ESStream) handOverLocked(pkts [][]byte) {
	if s.cfg.Mode != RTPTCP {
		return
	}
	for _, b := range pkts {
		if b != nil {
			s.bytes.Add(int64(len(b) + 4)) // appendFrame's header
		}
	}
}

// uncount takes back the n bytes of a packet counted in the stream's
// BytesSent as it was handed to the connection's writer, whose write
// failed. The engine's total counts a packet only once written, never
// taking bytes back: it is the node's vodnode_sent_bytes_total counter
// and the egress of its load reports, which must not decrease.
func (s *ESStream) uncount(n int64) {
	s.bytes.Add(-n)
}

// reportLoop sends each track's sender report when it is due (every
// Engine.SRInterval) for as long as the play runs, ctx: also while it
// sends no RTP, held by a PAUSE or at a Range's end, or waiting for the
// title's fill (sendUnit sends them along with the packets otherwise).
// Players need them there too: GStreamer's RTP session times out a
// source it hears nothing from, RTP or RTCP, for five report intervals
// (rtspsrc then ends the stream), and a player that joins or resyncs
// during a hold has no mapping without them. Each maps the wall clock now
// to the media time the play stands at (reportNow): a held play's clock
// stands still, so its reports all carry the RTP time where it holds,
// the one its packets go on from after the PLAY, on both tracks alike
// (RFC 3550 §6.4.1: the RTP time is that of the NTP time by the sender's
// media clock, which does not run while held). Over TCP a report the
// connection's writer cannot take at once (busy, or its queue full) stays
// due: the next packet sends it, waiting, or the loop tries again
// esReportRetry later.
//
// Over TCP each round holds s.mu from its check of the stream to its
// sends, which do not block (TryWrite): a report is sent, and counted,
// before a Close or Abort, or not at all (Abort does not wait for this
// loop over TCP, and the session's end report, read once it returns, has
// what was sent).
func (s *ESStream) reportLoop(ctx context.Context) {
	t := time.NewTimer(s.e.SRInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		next := now.Add(s.e.SRInterval)
		srs := make([][]byte, len(s.tc))
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return // Abort's BYE carries the last report
		}
		for i := range s.tc {
			if !s.track(i) || s.packets[i] == 0 {
				continue // nothing sent: nothing to report
			}
			if !now.Before(s.nextSR[i]) {
				s.nextSR[i] = now.Add(s.e.SRInterval)
				srs[i] = s.reportLocked(i, "")
			}
			if s.nextSR[i].Before(next) {
				next = s.nextSR[i]
			}
		}
		s.reportTries.Add(1)
		if s.cfg.Mode != RTPTCP {
			// Over UDP, sent out of the lock (a datagram may wait for
			// the socket), every one done with: Abort waits for this
			// loop over UDP.
			s.mu.Unlock()
			s.sendRTCP(srs, false)
			t.Reset(max(time.Until(next), time.Millisecond))
			continue
		}
		went := s.sendRTCP(srs, false)
		for i := range srs {
			if srs[i] != nil && !went[i] {
				// Dropped (the writer busy or full): due still, so that
				// the next packet takes it (waiting), else the loop
				// again soon.
				s.nextSR[i] = time.Time{}
				if retry := now.Add(esReportRetry); retry.Before(next) {
					next = retry
				}
			}
		}
		s.mu.Unlock()
		t.Reset(max(time.Until(next), time.Millisecond))
	}
}

// esReportRetry is how soon the report loop tries again a sender report
// the connection's writer could not take at once.
const esReportRetry = 50 * time.Millisecond

// reportAtOnceLocked makes each track's next sender report go with its
// next packet (sendUnit), when its play goes on after a hold or starts:
// the reports while held mapped the RTP time the play stood at to the
// wall clock of each, the play now maps it to the wall clock of the
// PLAY, and a receiver would map the packets by the last held report,
// off by the time from it to the PLAY, until the next one, up to
// Engine.SRInterval later (MP2T streams report with their first packets
// after a PLAY too). The same when the timeline restarts after a wait for
// the fill (esPlay.restarted). s.mu held.
func (s *ESStream) reportAtOnceLocked() {
	clear(s.nextSR)
}

// endOfTitleByeLocked sends each track's final sender report and BYE as
// the play reaches the end of the title (byeLocked), as
// Stream.endOfTitle does. It is tried while s.mu is held, and a PLAY's
// Seek, Resume, Close or Abort cancel the BYE still to send: it never
// follows the response to a PLAY that plays the title again (it would
// end the client's new play, RFC 3550 §6.6). s.mu held.
func (s *ESStream) endOfTitleByeLocked() {
	s.byeLocked(s.reportsLocked("end of title"), nil)
}

// byeLocked sends bye, per track the compound RTCP packet of a BYE ending
// a play: over UDP ByeDelay later, after the last RTP packets; over TCP
// handed, in track order, to the connection's writer, which takes them at
// once when free, else before its next write, whoever makes it, as
// Stream.byeLocked does (byeDue.offered). A PLAY's Seek, Resume, Close or
// Abort cancel them (byeDue.cancel): they never follow the response to
// a PLAY that plays the title again, nor a TEARDOWN's. done, when not
// nil, runs on a goroutine of its own once the BYEs went, were given up
// or were cancelled. s.mu held.
func (s *ESStream) byeLocked(bye [][]byte, done func()) {
	s.bye.cancel()
	switch {
	case s.cfg.Mode == RTPUDP && s.e.ByeDelay > 0:
		s.bye.later(&s.mu, s.e.ByeDelay, func() { s.sendRTCP(bye, false) }, done)
		return
	case s.cfg.Mode == RTPTCP:
		var frames []byte
		for i, b := range bye {
			if b != nil {
				frames = appendFrame(frames, uint8(s.tc[i].Channel+1), b)
			}
		}
		if len(frames) > 0 {
			s.bye.offered(&s.mu, s.cfg.Conn, frames, time.Now().Add(s.cfg.Conn.timeout), s.countSent, done)
			return
		}
	default:
		s.sendRTCP(bye, false)
	}
	if done != nil {
		go done()
	}
}

// countSent counts n bytes sent for the stream, in its BytesSent and the
// engine's.
func (s *ESStream) countSent(n int64) {
	s.bytes.Add(n)
	s.e.bytesSent.Add(n)
}
