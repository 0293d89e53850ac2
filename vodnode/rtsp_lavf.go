package vodnode

import (
	"strings"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// lavfSeekPastEnd reports whether a PLAY whose Range starts at or past the
// end of the title is answered as live555 answers it, the start clamped to
// the end (200, played from the last keyframe, RTCP BYE at the end), rather
// than 457: for libavformat's RTSP demuxer (ffmpeg, ffprobe, ffplay,
// mpv: libavformatAgent), in normal play (Scale 1); of a title still
// filling, the BYE alone, at once (lavfEndHere). libavformat seeks by
// PAUSE and a PLAY with Range; a refused PLAY only logs "could not seek" and then waits
// for RTP that a session still paused never sends, with no keepalive (it
// sends those only as packets come) and deaf to SIGINT (its first signal
// does not interrupt a read), until the node times the session out. The
// BYE on each track is its end of file: it sends TEARDOWN and exits. A
// PLAY without a Range start at the end of the title (ffplay un-paused
// there) is answered the same way, the end played again: libavformat
// clears its count of BYEs as it sends a PLAY. Other
// clients, which read the 457 and stay where they were, get it
// (RFC 2326 §11.3.12, RFC 7826 §13.4).
func lavfSeekPastEnd(req *base.Request, scale float64) bool {
	if scale != 1 {
		// Trick play (libavformat sends no Scale): 457, as to any
		// client ("Scale: 2" with a start past the end was clamped and
		// played the last keyframe, while normal play only is meant).
		return false
	}
	ua := req.Header["User-Agent"]
	return len(ua) > 0 && libavformatAgent(ua[0])
}

// libavformatAgent reports whether a User-Agent is that of a client whose
// RTSP is libavformat's demuxer: libavformat's own default ("Lavf" and
// its version: ffmpeg, ffprobe, ffplay), or mpv's default --user-agent,
// which mpv hands to that demuxer (its rtsp:// URLs are opened by
// demux_lavf, whose network options set the demuxer's user_agent):
// "libmpv" (mpv 0.35.1 sends it) or, from older mpv releases, "mpv
// <version>".
// A User-Agent set by the viewer (ffmpeg's -user_agent, mpv's
// --user-agent) is not recognised.
func libavformatAgent(ua string) bool {
	ua = strings.TrimSpace(ua)
	return strings.HasPrefix(ua, "Lavf") || ua == "libmpv" || strings.HasPrefix(ua, "mpv ")
}

// lavfEndHere reports whether a PLAY that lavfSeekPastEnd clamps to the
// end of s's title is answered with the end-of-title BYE at once, no
// media (deliver's EndHere): the title is still filling, its last
// keyframe not known yet. Played from the part not filled, the play
// would wait for the fill (minutes from a slow origin), libavformat
// silent meanwhile until the session timed out; it was answered 457,
// which it ignores. A title stored whole plays its last keyframe's group
// of pictures instead. s.ctl held.
func lavfEndHere(s *session) bool { return !s.t().View().Complete }
