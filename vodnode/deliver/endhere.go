package deliver

import (
	"time"

	"github.com/pion/rtcp"
)

// EndHere ends the play at once where the last Seek left the stream, as
// the end of the title ends it, without sending any media: the final
// sender report and the end-of-title BYE (byeLocked: over UDP ByeDelay
// later, over TCP at once or before the connection's next write), and
// nothing after it (the reports of a stream held stop), the stream left
// paused there (a Seek and Resume play on), and OnEnd hears
// EndOfTitle. It is a PLAY's answer to libavformat seeking past the end
// of a title still filling, whose last keyframe is not known yet: the
// BYE is its end of file, where a wait for the fill would leave it
// silent. Called in place of Resume, after the PLAY's response; nothing
// when the stream has ended.
func (s *Stream) EndHere() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateEnded {
		return
	}
	s.state = statePaused          // not queued again: a Resume takes it from here
	s.readerBackLocked(time.Now()) // at its end: no player waited for (ReaderStopped)
	// Nothing after the BYE (RFC 3550 §6.6): the reports of a stream held
	// (paused, or parked at the fill) stop, as at the end of the title.
	s.stopIdleReportLocked()
	rt := s.cfg.TSBase
	idx, complete, _ := s.cfg.Source.State()
	switch ck := s.clock(idx, complete); {
	case s.seekTo >= 0:
		rt = s.seekRTP // where the PLAY's RTP-Info put the stream
	case ck.ok():
		rt = s.rtpTime(ck, s.pos)
	}
	var b []byte
	if s.cfg.Mode != RawUDP {
		sr := &rtcp.SenderReport{SSRC: s.cfg.SSRC, NTPTime: ntpTime(time.Now()), RTPTime: rt,
			PacketCount: s.packets, OctetCount: s.octets}
		b, _ = rtcp.Marshal([]rtcp.Packet{sr, &rtcp.Goodbye{Sources: []uint32{s.cfg.SSRC}, Reason: "end of title"}})
	}
	s.byeLocked(b, nil)
	if s.cfg.OnEnd != nil {
		go s.cfg.OnEnd(EndOfTitle, nil)
	}
}

// EndHere is Stream.EndHere for elementary streams: each track's final
// report and end-of-title BYE (endOfTitleByeLocked: over UDP ByeDelay
// later, over TCP at once or before the connection's next write), no media,
// the stream left where its last Seek put it, and OnEnd hears
// EndOfTitle. Called in place of Resume; nothing when the stream has
// ended.
func (s *ESStream) EndHere() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.endOfTitleByeLocked()
	if s.cfg.OnEnd != nil {
		go s.cfg.OnEnd(EndOfTitle, nil)
	}
}
