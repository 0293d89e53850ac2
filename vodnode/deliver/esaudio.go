package deliver

import (
	"fmt"
	"net"

	"github.com/bluenviron/gortsplib/v4/pkg/format"
)

// ESAudio is one AAC track of a title, as an elementary-stream session
// offers it: its RTP format (RFC 3640, its payload type and its
// AudioSpecificConfig), its PID and its language.
type ESAudio struct {
	Format *format.MPEG4Audio
	PID    uint16
	// Lang is the ISO 639-2 code of the track's ISO_639_language_descriptor
	// in the PMT (ISO/IEC 13818-1 §2.6.18), "" when it has none.
	Lang string
}

// AudioTracks returns the title's AAC tracks in PMT order: Audios, or
// Audio alone (PID and language unknown) when Audios is empty. Track
// index 1+k of a playback is AudioTracks()[k].
func (t *ESTracks) AudioTracks() []ESAudio {
	if len(t.Audios) > 0 {
		return t.Audios
	}
	if t.Audio != nil {
		return []ESAudio{{Format: t.Audio}}
	}
	return nil
}

// ESTrackConfig is where one audio track past the first of an
// elementary-stream playback goes (ESConfig.More): its entries mean what
// ESConfig's per-track entries mean. Not set up: a nil Dest (UDP) or a
// negative Channel (TCP).
type ESTrackConfig struct {
	Dest    *net.UDPAddr // RTPUDP: the client's RTP address
	RTCP    *net.UDPAddr // RTPUDP: the client's RTCP address; nil = no RTCP
	Channel int          // RTPTCP: interleaved RTP channel
	SSRC    uint32
	Seq     uint16 // first sequence number
	TSBase  uint32 // RTP timestamp of PTS 0
}

// esTrackConfigs returns the per-track configuration of cfg, index 0 the
// video, 1+k the AAC track k: at least two entries (video and first
// audio), one more per further AAC track of the title. Errors: more
// further tracks configured than the title has.
func esTrackConfigs(cfg *ESConfig) ([]ESTrackConfig, error) {
	n := max(2, 1+len(cfg.Tracks.AudioTracks()))
	if 2+len(cfg.More) > n {
		return nil, fmt.Errorf("deliver: ES stream with %d audio tracks set up, the title has %d", 1+len(cfg.More), n-1)
	}
	out := make([]ESTrackConfig, n)
	for i := range 2 {
		out[i] = ESTrackConfig{Dest: cfg.Dest[i], RTCP: cfg.RTCP[i], Channel: cfg.Channel[i], SSRC: cfg.SSRC[i], Seq: cfg.Seq[i], TSBase: cfg.TSBase[i]}
	}
	for i := 2; i < n; i++ {
		out[i] = ESTrackConfig{Channel: -1}
		if i-2 < len(cfg.More) {
			out[i] = cfg.More[i-2]
		}
	}
	return out, nil
}

// audioFormat returns the RTP format of track i (1+k: AAC track k), nil
// for the video or a track the title does not have.
func (s *ESStream) audioFormat(i int) *format.MPEG4Audio {
	if a := s.cfg.Tracks.AudioTracks(); i >= 1 && i-1 < len(a) {
		return a[i-1].Format
	}
	return nil
}

// pmtEntry is one elementary stream of a PMT: its stream type, PID and
// language (ISO 639-2, "" when none).
type pmtEntry struct {
	typ  byte
	pid  uint16
	lang string
}

// pmtEntries returns the entries of the PMT section starting in TS packet
// pkt (PID pmtPID); nil when pkt does not start one, or it does not end
// in the packet.
func pmtEntries(pkt []byte, pmtPID uint16) []pmtEntry {
	sec, end := pmtSection(pkt, pmtPID)
	if sec == nil {
		return nil
	}
	var out []pmtEntry
	for j := 12 + (int(sec[10]&0x0f)<<8 | int(sec[11])); j+5 <= end; {
		infoLen := int(sec[j+3]&0x0f)<<8 | int(sec[j+4])
		e := pmtEntry{typ: sec[j], pid: uint16(sec[j+1]&0x1f)<<8 | uint16(sec[j+2])}
		desc := sec[j+5 : min(j+5+infoLen, end)]
		for k := 0; k+2 <= len(desc); k += 2 + int(desc[k+1]) {
			if desc[k] == 0x0a && desc[k+1] >= 3 && k+5 <= len(desc) { // ISO_639_language_descriptor
				e.lang = string(desc[k+2 : k+5])
				break
			}
		}
		out = append(out, e)
		j += 5 + infoLen
	}
	return out
}

// pmtSection returns the PMT section starting in TS packet pkt (PID
// pmtPID) and the offset of its CRC in it; nil when pkt does not start
// one, or it does not end in the packet.
func pmtSection(pkt []byte, pmtPID uint16) ([]byte, int) {
	if len(pkt) < TSPacketSize || pkt[0] != 0x47 || pkt[1]&0x40 == 0 || uint16(pkt[1]&0x1f)<<8|uint16(pkt[2]) != pmtPID || pkt[3]&0x10 == 0 {
		return nil, 0
	}
	i := 4
	if pkt[3]&0x20 != 0 {
		i += 1 + int(pkt[4])
	}
	if i >= len(pkt) {
		return nil, 0
	}
	i += 1 + int(pkt[i]) // pointer_field
	if i+12 > len(pkt) {
		return nil, 0
	}
	sec := pkt[i:]
	slen := int(sec[1]&0x0f)<<8 | int(sec[2])
	if sec[0] != 0x02 || slen < 13 || 3+slen > len(sec) {
		return nil, 0
	}
	return sec, 3 + slen - 4
}

// pmtLanguages returns the language of each elementary stream, by PID,
// of the PMT (PID pmtPID) among the TS packets psi (ReadPSI's).
func pmtLanguages(psi []byte, pmtPID uint16) map[uint16]string {
	out := map[uint16]string{}
	for i := 0; i+TSPacketSize <= len(psi); i += TSPacketSize {
		for _, e := range pmtEntries(psi[i:i+TSPacketSize], pmtPID) {
			if e.lang != "" && validLang(e.lang) {
				out[e.pid] = e.lang
			}
		}
	}
	return out
}

// validLang reports whether l is made of ASCII letters only (an ISO 639
// code), so that a bogus descriptor does not put bytes into the SDP.
func validLang(l string) bool {
	for _, c := range []byte(l) {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return l != ""
}
