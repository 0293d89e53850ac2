package deliver

import (
	"errors"
	"fmt"
	"time"

	"github.com/pion/rtcp"

	"vodcluster/cdp/tsindex"
)

var errNoClock = errors.New("deliver: title has no clock (no PCR and no bitrate)")

// maxCatchUp is how late a UDP stream's packets may be when the node
// resumes sending them, and how far ahead of a play's timeline the title's
// clock at its position may run, before the timeline restarts at the
// position (step): 1 s.
const maxCatchUp = time.Second

// step sends what is due of s at now (engine ns); false drops s from the
// shard's active list (paused, ended, or parked until the fill progresses).
func (s *Stream) step(sh *shard, now int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != statePlaying {
		s.queued = false
		return false
	}
	if s.resize.Swap(false) {
		// A path MTU learned after SETUP (ICMP Packet Too Big, a route
		// changed): the kernel refuses GSO trains of the old size.
		s.pay = streamPayload(s.cfg)
	}
	idx, complete, err := s.cfg.Source.State()
	if err != nil {
		// A seek still waiting (seekSettled) plays what the fill left
		// when the fill passed its time before failing, from the keyframe
		// at or before it; s.pos is only the bitrate's estimate then.
		left := s.pos+TSPacketSize > idx.Size
		if s.seekTo >= 0 {
			ck := s.clock(idx, true)
			left = !ck.ok() || s.seekTo >= ck.npt(idx.Size)
		}
		if left || s.trick() {
			// The title's fill failed and the stream has played what it
			// left (trick play: wherever it stands): unless its title is
			// filled again for it (refillFailed), the client is told the
			// stream ends (an RTSP client over TCP would otherwise wait
			// in silence until its keepalive meets the ended session).
			if s.refillFailed() {
				return false
			}
			s.endWithBye(EndError, err, "fill failed")
			return false
		}
		complete = true // the bytes the fill left are played to their end first
	}
	ck := s.clock(idx, complete)
	if !ck.ok() {
		if complete {
			s.finish(EndError, errNoClock)
			return false
		}
		return s.park(idx.Size)
	}
	s.setClock0(ck)
	if s.seekTo >= 0 {
		// A seek into the part not filled when it was asked starts at the
		// keyframe presented at or before its time once the fill has
		// indexed it and one presented after (seekSettled): from the offset the bitrate gave, in the middle of a
		// picture, a decoder shows nothing or garbage until the next one.
		if !complete && !ck.seekSettled(s.seekTo) {
			return s.park(idx.Size)
		}
		if off, _ := ck.keyframeBefore(s.seekTo); off >= 0 {
			s.pos = off
		} else {
			// No keyframe at or before it (a title without video): the
			// offset of its time by the title's clock, as seekOffset
			// gives on the complete title, not the bitrate's estimate.
			off = ck.offset(ck.at(0) + int64(s.seekTo*tsindex.PCRHz))
			s.pos = max(off-off%TSPacketSize, 0)
		}
		s.startAsAnswered(ck)
		s.seekTo = -1
	}
	if s.trick() {
		return s.stepTrick(sh, now, idx, complete, ck)
	}
	if !s.anchored {
		s.anchorClock, s.anchorWall, s.anchored = ck.at(s.pos), now, true
	} else if s.cfg.Mode != RTPTCP && now-s.dueAt(ck, s.pos) > int64(maxCatchUp) {
		// The node itself sent nothing for a while (a VM paused, the
		// process stopped, a disk read stuck): over UDP the timeline
		// restarts at the position rather than sending what is overdue
		// at once, which a set-top box's jitter buffer of a second or two
		// would drop. Over TCP the connection paces a catch-up, and a
		// stream its connection held back is ended past MaxLag.
		s.anchorClock, s.anchorWall = ck.at(s.pos), now
	} else if ck.at(s.pos)-(s.anchorClock+(now-s.anchorWall)*27/1000) > int64(maxCatchUp)*27/1000 {
		// The title's clock at the position runs ahead of the play's
		// timeline by more than maxCatchUp: the index it reads by was
		// replaced under it (a read far ahead of a fill handed over to
		// the fill's index, whose clock absorbed a jump the read's did
		// not), or the title's clock leaps where its index kept the leap.
		// Waiting for that time would leave the viewer without a packet;
		// the timeline restarts at the position.
		s.anchorClock, s.anchorWall = ck.at(s.pos), now
	}
	if s.injectPSI {
		if psi := s.seekPSI(idx); len(psi) > 0 {
			sh.reserve(len(psi), 1)
			buf := sh.arenaTake(len(psi))
			copy(buf, psi)
			if ok, err := s.emit(sh, ck, now, buf, s.pos, true); err != nil || !ok {
				if err != nil {
					s.finish(writeEnd(err), err)
					return false
				}
				return true
			}
		}
		s.injectPSI = false
	}
	// send only when a packet is due within Lead, then a batch of what is
	// due within Lead+Batch: fewer, larger writes, each packet at most
	// Lead+Batch early and never late by more than a tick
	due := s.dueOffset(ck, now+int64(s.e.Lead))
	if due-s.pos >= int64(s.pay) || (complete && due >= idx.Size) {
		due = s.dueOffset(ck, now+int64(s.e.Lead+s.e.Batch))
	}
	avail := idx.Size
	starving := !complete && due > avail
	due = min(due, avail)
	stop := s.stopOffset(ck)
	atStop := stop >= 0 && due >= stop
	if atStop {
		due, starving = max(stop, s.pos), false
	}
	n := due - s.pos
	if !atStop && (!complete || due < avail) {
		n -= n % int64(s.pay) // whole datagrams (s.pay: PayloadSize, or less to fit the route's MTU)
	}
	n = min(n, int64(s.e.MaxBurst*s.pay))
	if n > 0 && s.readerStopped.Load() && now < s.stoppedRetry {
		// Waiting for a player that stopped reading: its connection is
		// tried every readerRetry, not at every tick (a read of the
		// title and a write refused, 400 times a second for each paused
		// viewer).
		s.anchorClock, s.anchorWall = ck.at(s.pos), now
		return true
	}
	if n > 0 {
		sent, err := s.send(sh, ck, now, int(n))
		if err != nil {
			s.failed(err)
			return false
		}
		if !sent {
			if s.readerStopped.Load() {
				s.anchorClock, s.anchorWall = ck.at(s.pos), now
				s.stoppedRetry = now + int64(readerRetry)
				return true
			}
			if lag := now - s.dueAt(ck, s.pos); lag > int64(s.e.MaxLag) {
				state := readerReading
				if s.cfg.Conn != nil {
					state = s.cfg.Conn.readerState(s.e.MaxLag)
				}
				if state == readerBusy {
					return true // asked again at the next tick
				}
				if state == readerGone {
					// The player stopped reading, its host alive: paused
					// without a PAUSE (mpv). The stream waits at the
					// position, its timeline restarting there until the
					// player reads again, so that it goes on from there
					// at its pace, not MaxLag behind; the session lives
					// as a paused one does.
					s.anchorClock, s.anchorWall = ck.at(s.pos), now
					// Stopped since what it could not send was due.
					s.readerStoppedLocked(s.e.wall(now - lag))
					s.stoppedRetry = now + int64(readerRetry)
					s.e.readerStops.Add(1)
					return true
				}
				s.finish(EndSlow, fmt.Errorf("%w: %v behind", ErrQueueFull, time.Duration(lag)))
				return false
			}
			return true
		}
		s.readerBackLocked(s.e.wall(now))
	}
	if stop >= 0 && s.pos >= stop && (!complete || s.pos < avail) {
		// The Range's end: paused there, off the shard (a PLAY resumes).
		s.state, s.stopNPT, s.queued = statePaused, -1, false
		s.idleReportLocked()
		return false
	}
	if complete && s.pos >= avail {
		if err != nil {
			if s.refillFailed() {
				return false
			}
			s.endWithBye(EndError, err, "fill failed")
			return false
		}
		s.endOfTitle(ck)
		return false
	}
	if starving && avail-s.pos < int64(s.pay) {
		return s.park(s.pos + int64(s.pay) - 1)
	}
	return true
}

// dueOffset returns the end of the packets due at engine time t.
func (s *Stream) dueOffset(ck clockOf, t int64) int64 {
	target := s.anchorClock + (t-s.anchorWall)*27/1000
	return (ck.offset(target)/TSPacketSize + 1) * TSPacketSize
}

// dueAt returns the engine time at which offset off is due.
func (s *Stream) dueAt(ck clockOf, off int64) int64 {
	return s.anchorWall + (ck.at(off)-s.anchorClock)*1000/27 - int64(s.e.Lead)
}

// park takes s off its shard until more than after bytes are readable;
// the stream's timeline restarts from its position when it wakes.
// readerRetry is how often a stream waiting for a player that stopped
// reading (Stream.readerStopped) tries its connection again.
const readerRetry = 100 * time.Millisecond

func (s *Stream) park(after int64) bool {
	gen := s.gen
	if !s.cfg.Source.Notify(after, func() { s.wake(gen) }) {
		return true
	}
	s.parked, s.queued, s.anchored = true, false, false
	s.idleReportLocked()
	return false
}

// refillFailed asks cfg.OnFillFailed, on a goroutine of its own, whether
// the title whose fill failed, the stream at the end of the bytes it
// left (in trick play: wherever it stands), is filled again; true when
// the stream waits for the answer,
// parked as for the fill: filled again, it plays on from its position
// (the source no longer failing), refused, it ends at its next step with
// the BYE "fill failed". False when there is nothing to ask (no
// OnFillFailed, or it refused since the last Resume). s.mu held.
func (s *Stream) refillFailed() bool {
	if s.cfg.OnFillFailed == nil || s.refused {
		return false
	}
	s.parked, s.queued, s.anchored = true, false, false
	s.idleReportLocked()
	if s.refilling {
		return true // the answer under way wakes it
	}
	s.refilling = true
	go func() {
		ok := s.cfg.OnFillFailed()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.refilling, s.refused = false, !ok
		if !s.parked || s.state != statePlaying {
			return // paused, ended, or played on by a PLAY meanwhile
		}
		s.parked, s.queued = false, true
		s.sh.add(s)
	}()
	return true
}

func (s *Stream) wake(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.parked || s.gen != gen || s.state != statePlaying {
		return
	}
	s.parked, s.queued = false, true
	s.sh.add(s)
}

// send sends n bytes from s.pos; false (nothing sent) when the TCP
// connection cannot take them now.
func (s *Stream) send(sh *shard, ck clockOf, now int64, n int) (bool, error) {
	sh.reserve(n, (n+s.pay-1)/s.pay)
	buf := sh.arenaTake(n)
	if _, err := s.cfg.Source.ReadAt(buf, s.pos); err != nil {
		return false, readError(s.pos, err)
	}
	ok, err := s.emit(sh, ck, now, buf, s.pos, false)
	if ok {
		s.pos += int64(n)
	}
	return ok, err
}

// emit packetises buf (whole TS packets taken from offset off, or, when
// still is set, one picture whose packets all carry the clock of off) and
// queues or writes it; false when the TCP connection cannot take it now.
// buf must come from the shard's scratch, reserved for its datagrams.
func (s *Stream) emit(sh *shard, ck clockOf, now int64, buf []byte, off int64, still bool) (bool, error) {
	n := len(buf)
	k := (n + s.pay - 1) / s.pay
	at := func(i int) int64 {
		if still {
			return off
		}
		return off + int64(i)
	}
	wire := 0
	switch s.cfg.Mode {
	case RTPUDP, RawUDP:
		// one GSO train (UDP_SEGMENT) when the kernel can, else k datagrams;
		// the iovecs alternate RTP header and payload, so segments of
		// header+s.pay bytes are exactly the RTP packets (s.pay: what fits
		// the route's MTU)
		rtpMode := s.cfg.Mode == RTPUDP
		gso := k > 1 && s.e.UDP.gso
		start := len(sh.bufs)
		for i := 0; i < n; i += s.pay {
			p := buf[i:min(i+s.pay, n)]
			var iov [][]byte
			if rtpMode {
				h := sh.hdrTake()
				s.header(h, ck, s.seq+uint16(i/s.pay), at(i))
				iov = sh.iov(h, p)
			} else {
				iov = sh.iov(p)
			}
			if !gso {
				sh.queueUDP(s, iov, nil, s.cfg.Dest)
			}
			wire += len(p)
			if rtpMode {
				wire += rtpHeaderSize
			}
		}
		if gso {
			seg := s.pay
			if rtpMode {
				seg += rtpHeaderSize
			}
			sh.queueUDP(s, sh.bufs[start:len(sh.bufs):len(sh.bufs)], s.e.UDP.segmentOOB(seg), s.cfg.Dest)
		}
		if s.cfg.Mode == RTPUDP && now >= s.nextSR {
			s.nextSR = now + int64(s.e.SRInterval)
			s.sendRTCP(s.senderReport(ck, off))
		}
	case RTPTCP:
		out := sh.out[:0]
		for i := 0; i < n; i += s.pay {
			p := buf[i:min(i+s.pay, n)]
			l := rtpHeaderSize + len(p)
			out = append(out, '$', s.cfg.Channel, byte(l>>8), byte(l))
			out = append(out, make([]byte, rtpHeaderSize)...)
			s.header(out[len(out)-rtpHeaderSize:], ck, s.seq+uint16(i/s.pay), at(i))
			out = append(out, p...)
		}
		sr := now >= s.nextSR
		if sr {
			out = appendFrame(out, s.cfg.Channel+1, s.senderReport(ck, off))
		}
		sh.out = out[:0]
		ok, err := s.cfg.Conn.TryWrite(out)
		if err != nil || !ok {
			return false, err
		}
		if sr {
			s.nextSR = now + int64(s.e.SRInterval)
		}
		wire = len(out)
	}
	s.seq += uint16(k)
	s.packets += uint32(k)
	s.octets += uint32(n)
	s.bytes.Add(int64(wire))
	s.e.bytesSent.Add(int64(wire))
	return true, nil
}

func appendFrame(out []byte, ch uint8, b []byte) []byte {
	out = append(out, '$', ch, byte(len(b)>>8), byte(len(b)))
	return append(out, b...)
}

// senderReport returns an RTCP sender report (RFC 3550 §6.4.1) mapping
// now to the RTP time of the title's byte offset off: that of the packets
// it is sent with (the position in normal play; in trick play the
// keyframe sent, which the position reaches only after it).
func (s *Stream) senderReport(ck clockOf, off int64) []byte {
	return s.report(s.rtpTime(ck, off))
}

// report returns an RTCP sender report mapping now to RTP time rtpTime.
func (s *Stream) report(rtpTime uint32) []byte {
	b, _ := (&rtcp.SenderReport{
		SSRC:        s.cfg.SSRC,
		NTPTime:     ntpTime(time.Now()),
		RTPTime:     rtpTime,
		PacketCount: s.packets,
		OctetCount:  s.octets,
	}).Marshal()
	return b
}

// byePacket returns a final sender report and an RTCP BYE (RFC 3550
// §6.6) as one compound packet; nil in RawUDP mode (no RTCP).
func (s *Stream) byePacket(ck clockOf) []byte {
	if s.cfg.Mode == RawUDP {
		return nil
	}
	sr := &rtcp.SenderReport{SSRC: s.cfg.SSRC, NTPTime: ntpTime(time.Now()), RTPTime: s.rtpTime(ck, s.pos),
		PacketCount: s.packets, OctetCount: s.octets}
	b, err := rtcp.Marshal([]rtcp.Packet{sr, &rtcp.Goodbye{Sources: []uint32{s.cfg.SSRC}, Reason: "end of title"}})
	if err != nil {
		return nil
	}
	return b
}

// abortBye sends an RTCP BYE with reason for a stream ended before the
// end of its title (abortByePacket), without waiting. It returns false
// when the connection's writer could not take it at once (sendControl;
// Abort then writes it waiting for the writer), true otherwise.
func (s *Stream) abortBye(reason string) bool {
	if s.cfg.Mode == RawUDP {
		return true
	}
	b := abortByePacket(s.cfg.SSRC, reason)
	if b == nil {
		return true
	}
	return s.sendControl(b)
}

// abortByePacket returns the RTCP BYE with reason of stream ssrc ended
// before the end of its title, after an empty receiver report (RFC 3550
// §6.1: a compound packet starts with a report; the sender report's RTP
// time is not known without the title's clock); nil if it cannot be
// made (a reason over 255 bytes).
func abortByePacket(ssrc uint32, reason string) []byte {
	b, err := rtcp.Marshal([]rtcp.Packet{&rtcp.ReceiverReport{SSRC: ssrc},
		&rtcp.Goodbye{Sources: []uint32{ssrc}, Reason: reason}})
	if err != nil {
		return nil
	}
	return b
}

// endWithBye ends the stream on its own before the end of its title
// (its fill failed, its file could not be read) with reason and err, and
// tells its client with an RTCP BYE carrying bye, as endOfTitle tells it
// the end of the title (byeLocked): over UDP after Engine.ByeDelay, so
// that the BYE follows the last RTP packets; over TCP at once, or, when
// the connection's writer cannot take it then (busy with a response or
// another session's packets, or its queue full), before the writer's
// next write. A Close or Abort (the session ended otherwise: a TEARDOWN)
// cancels the BYE still to send: it is written before the TEARDOWN's
// response, or not at all. OnEnd is called once the BYE went (so that BytesSent, which the
// session reports, counts it), was given up or cancelled. s.mu held.
func (s *Stream) endWithBye(reason EndReason, err error, bye string) {
	s.state, s.endedBy, s.endErr = stateEnded, reason, err
	s.queued = false
	s.stopIdleReportLocked()
	var b []byte
	if s.cfg.Mode != RawUDP {
		b = abortByePacket(s.cfg.SSRC, bye)
	}
	s.byeLocked(b, func() {
		if s.cfg.OnEnd != nil {
			s.cfg.OnEnd(reason, err)
		}
	})
}

// byeLocked sends b, the compound RTCP packet of a BYE ending a play (nil:
// none): over UDP ByeDelay later (byeDue.later), after the last RTP
// packets; over TCP handed to the connection's writer (byeDue.offered),
// which takes it at once when free, else before its next write, whoever
// makes it (a response, another session's packets), up to the writer's
// blocking-write timeout (past it the client is taken to be not reading:
// its RTSP connection then ends the session). The BYE of the end of the
// title is sent only while the stream still waits at the end of the same
// play, and any only until the stream is closed: a PLAY's Seek, Resume,
// Close, Abort or the stream's end cancel it (byeDue.cancel), and stop
// its timer, which would otherwise keep the stream in memory; a play on
// must not be followed by the BYE of the one before (the client would end
// it, RFC 3550 §6.6), nor a TEARDOWN's response by a BYE: one the writer
// took before the cancel goes before anything written after it. b is sent
// as made: the sender report of the end of the title maps the RTP time of
// the title's end to the wall clock it was reached at. done, when not
// nil, runs on a goroutine of its own once b went, was given up or was
// cancelled. s.mu held.
func (s *Stream) byeLocked(b []byte, done func()) {
	s.bye.cancel()
	switch {
	case b == nil:
	case s.cfg.Mode == RTPUDP && s.e.ByeDelay > 0:
		s.bye.later(&s.mu, s.e.ByeDelay, func() { s.sendControl(b) }, done)
		return
	case s.cfg.Mode == RTPTCP:
		frame := appendFrame(nil, s.cfg.Channel+1, b) // the stream's RTCP, counted as over UDP and in emit
		s.bye.offered(&s.mu, s.cfg.Conn, frame, time.Now().Add(s.cfg.Conn.timeout), s.countSent, done)
		return
	default:
		s.sendControl(b)
	}
	if done != nil {
		go done()
	}
}

// countSent counts n bytes sent for the stream, in its BytesSent and the
// engine's.
func (s *Stream) countSent(n int64) {
	s.bytes.Add(n)
	s.e.bytesSent.Add(n)
}

// failed ends the stream for err, the error of reading its title
// (EndDiskRead: the client is told with a BYE, as of a failed fill) or
// of writing to its client (writeEnd). s.mu held.
func (s *Stream) failed(err error) {
	if re := (*ReadError)(nil); errors.As(err, &re) {
		s.endWithBye(EndDiskRead, err, string(EndDiskRead))
		return
	}
	s.finish(writeEnd(err), err)
}

// sendControl sends the compound RTCP packet b on the stream's RTCP path
// (UDP, or its interleaved channel), without waiting. It returns false
// when the connection's writer could not take b at once (busy or its
// queue full: b was not sent, and may be later); true otherwise: sent, or
// lost (over UDP; over TCP, a connection that failed, which takes nothing
// more: its RTSP connection ends the stream).
func (s *Stream) sendControl(b []byte) bool {
	switch s.cfg.Mode {
	case RTPUDP:
		s.sendRTCP(b)
	case RTPTCP:
		ok, err := s.cfg.Conn.TryWrite(appendFrame(nil, s.cfg.Channel+1, b))
		if err != nil {
			return true // lost: no retry takes it
		}
		if !ok {
			return false
		}
		s.bytes.Add(int64(len(b) + 4)) // the stream's RTCP, as over UDP and in emit
		s.e.bytesSent.Add(int64(len(b) + 4))
	}
	return true
}

func (s *Stream) sendRTCP(b []byte) {
	if s.cfg.RTCPDest == nil || s.e.UDP == nil {
		return
	}
	if _, err := s.e.UDP.RTCP.WriteTo(b, s.cfg.RTCPDest); err == nil {
		s.bytes.Add(int64(len(b)))
		s.e.bytesSent.Add(int64(len(b)))
	}
}

// ntpTime returns t as a 64-bit NTP timestamp (RFC 5905: seconds since
// 1900 in the high 32 bits, fraction in the low 32).
func ntpTime(t time.Time) uint64 {
	const unixToNTP = 2208988800
	ns := t.UnixNano() // wall clock: NTP time is
	sec := uint64(ns/1e9) + unixToNTP
	frac := uint64(ns%1e9) << 32 / 1e9
	return sec<<32 | frac
}
