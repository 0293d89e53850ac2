package deliver

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"sync/atomic"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"
)

// mediacommon's MPEG-TS reader, initialising, reads on until it has the
// first packet of each AAC (and AC-3) track, to learn its config, and
// keeps all it reads in memory (up to 1 MB) to hand it out again. Handed
// the paced reader of a play from a point after which the title's audio
// has no more packets (an audio track shorter than the video, a seek into
// a long gap in it), it read on in real time and nothing was sent.
//
// esAudioWindow bounds, in the title's time from a play's start, where
// its audio's first packet is looked for before the play is started
// (esAudioWindowBytes in bytes, below the reader's 1 MB): past it, the
// play sends video alone. A multiplexer places audio at most ~1 s from
// the video of its time (esReadAhead), in packets of up to ~0.7 s.
const (
	esAudioWindow      = 4 * 27_000_000 // 27 MHz ticks
	esAudioWindowBytes = 1<<20 - 16<<10
)

// initDemux initialises r to read rd. The head of the play (from rd's
// position, its prefix first) is first read unpaced, up to the window,
// by a reader of its own: audio found there (or none in the title), r
// reads rd as it always has; not found, r is initialised with the
// title's PMT stripped of its AAC and AC-3 entries, so that it does not
// wait for them: the play sends video alone at once, and, for a gap in
// the audio, none of the audio after the gap either, until the next
// PLAY. Errors: r's, or rd's context's.
func (s *ESStream) initDemux(r *mpegts.Reader, rd *pacedReader) error {
	idx, complete, _ := s.cfg.Source.State()
	end := rd.off + esAudioWindowBytes
	if ck := (clockOf{idx: idx}); ck.ok() {
		if e := ck.offset(ck.at(rd.off) + esAudioWindow); e > rd.off && (complete || e < idx.Size) {
			end = min(end, e+TSPacketSize)
		}
	}
	probe := &mpegts.Reader{R: &esHeadReader{ctx: rd.ctx, src: s.cfg.Source, prefix: rd.prefix, off: rd.off, end: end, waiting: rd.waiting}}
	err := probe.Initialize()
	if err == nil || idx.PMTPID == 0 {
		r.R = rd
		return r.Initialize()
	}
	if cerr := rd.ctx.Err(); cerr != nil {
		return cerr
	}
	f := &noAudioPMT{r: rd, pid: idx.PMTPID, on: true}
	r.R = f
	err = r.Initialize()
	f.on = false // from here on, rd's reads as they are
	return err
}

// esHeadReader reads a title from off to end, its prefix first, unpaced,
// waiting for a fill.
type esHeadReader struct {
	ctx      context.Context
	src      Source
	prefix   []byte
	off, end int64
	waiting  *atomic.Bool // set while it waits for the fill; nil: not told
}

func (r *esHeadReader) Read(p []byte) (int, error) {
	if len(r.prefix) > 0 {
		n := copy(p, r.prefix)
		r.prefix = r.prefix[n:]
		return n, nil
	}
	if r.off >= r.end {
		return 0, io.EOF
	}
	if idx, _, _ := r.src.State(); r.waiting != nil && idx.Size <= r.off {
		r.waiting.Store(true)
		defer r.waiting.Store(false)
	}
	avail, err := WaitAvailable(r.ctx, r.src, r.off)
	if err != nil {
		return 0, err
	}
	if r.off >= avail {
		return 0, io.EOF
	}
	n := min(int64(len(p)), avail-r.off, r.end-r.off)
	m, err := r.src.ReadAt(p[:n], r.off)
	r.off += int64(m)
	if m > 0 && errors.Is(err, io.EOF) {
		err = nil
	}
	return m, err
}

// noAudioPMT reads r a TS packet at a time while on, with the AAC and
// AC-3 entries of the PMTs (PID pid) made of a reserved stream type,
// which mediacommon's reader takes for a track it does not read; off, it
// reads r as it is.
type noAudioPMT struct {
	r   io.Reader
	pid uint16
	on  bool
}

func (f *noAudioPMT) Read(p []byte) (int, error) {
	if !f.on || len(p) < TSPacketSize {
		return f.r.Read(p)
	}
	n, err := io.ReadFull(f.r, p[:TSPacketSize])
	if n == TSPacketSize {
		stripAudioES(p[:n], f.pid)
		return n, nil
	}
	return n, err
}

// stripAudioES gives the AAC (0x0F) and AC-3 (0x81) entries of the PMT
// section starting in TS packet pkt (PID pmtPID) the reserved stream
// type 0x00 and the section its CRC again; a section that does not end
// in the packet is left as it is.
func stripAudioES(pkt []byte, pmtPID uint16) {
	if pkt[0] != 0x47 || pkt[1]&0x40 == 0 || uint16(pkt[1]&0x1f)<<8|uint16(pkt[2]) != pmtPID || pkt[3]&0x10 == 0 {
		return
	}
	i := 4
	if pkt[3]&0x20 != 0 {
		i += 1 + int(pkt[4])
	}
	if i >= len(pkt) {
		return
	}
	i += 1 + int(pkt[i]) // pointer_field
	if i+12 > len(pkt) {
		return
	}
	sec := pkt[i:]
	slen := int(sec[1]&0x0f)<<8 | int(sec[2])
	if sec[0] != 0x02 || slen < 13 || 3+slen > len(sec) {
		return
	}
	end := 3 + slen - 4 // the CRC
	changed := false
	for j := 12 + (int(sec[10]&0x0f)<<8 | int(sec[11])); j+5 <= end; j += 5 + (int(sec[j+3]&0x0f)<<8 | int(sec[j+4])) {
		if sec[j] == 0x0f || sec[j] == 0x81 {
			sec[j], changed = 0x00, true
		}
	}
	if changed {
		binary.BigEndian.PutUint32(sec[end:], crc32MPEG(sec[:end]))
	}
}

// crc32MPEG returns the CRC of a PSI section (ISO/IEC 13818-1 Annex B:
// CRC-32/MPEG-2).
func crc32MPEG(b []byte) uint32 {
	crc := uint32(0xffffffff)
	for _, v := range b {
		crc ^= uint32(v) << 24
		for range 8 {
			if crc&0x80000000 != 0 {
				crc = crc<<1 ^ 0x04c11db7
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
