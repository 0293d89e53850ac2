package deliver

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"maps"
	"slices"
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
// by a reader of its own: the first packet of every audio track found
// there (or no audio in the title), r reads rd as it always has; else r
// is initialised with the title's PMT stripped of the AAC and AC-3
// entries of the tracks without a packet in the head (all of them when
// each has one there, yet the head did not do), so that it does not wait
// for them: the play sends video and the other tracks at once, and, for
// a gap in a track, none of its audio after the gap either, until the
// next PLAY. Errors: r's, or rd's context's.
func (s *ESStream) initDemux(r *mpegts.Reader, rd *pacedReader) error {
	idx, complete, _ := s.cfg.Source.State()
	end := rd.off + esAudioWindowBytes
	if ck := (clockOf{idx: idx}); ck.ok() {
		if e := ck.offset(ck.at(rd.off) + esAudioWindow); e > rd.off && (complete || e < idx.Size) {
			end = min(end, e+TSPacketSize)
		}
	}
	// What the probe reads is kept: the head is read once, the rest of
	// it (past where the probe stopped) read on when needed.
	hr := &esHeadReader{ctx: rd.ctx, src: s.cfg.Source, prefix: rd.prefix, off: rd.off, end: end, waiting: rd.waiting}
	var head bytes.Buffer
	probe := &mpegts.Reader{R: io.TeeReader(hr, &head)}
	err := probe.Initialize()
	if err == nil || idx.PMTPID == 0 {
		r.R = rd
		return r.Initialize()
	}
	if cerr := rd.ctx.Err(); cerr != nil {
		return cerr
	}
	io.Copy(&head, hr) // ends at the head's end (errHeadEnd), the title's, or rd's context's end
	if cerr := rd.ctx.Err(); cerr != nil {
		return cerr
	}
	absent := audioAbsent(head.Bytes(), idx.PMTPID, hr.titleEnd)
	f := &noAudioPMT{r: rd, pid: idx.PMTPID, on: true, strip: absent}
	r.R = f
	err = r.Initialize()
	f.on = false // from here on, rd's reads as they are
	return err
}

// esHeadReader reads a title from off to end, its prefix first, unpaced,
// waiting for a fill. At end it fails with errHeadEnd, not io.EOF: at
// io.EOF the demultiplexer (astits) hands out the PES packets it holds,
// which the play's reader, going on past end, hands out only when the
// next PES packet of the same PID starts; the head would have found a
// track's first packet that the play's reader never finishes (the last
// PES packet of a track that ends there), and that reader, initialising,
// read on in real time and sent nothing. io.EOF at the title's end
// (titleEnd set), as the play's reader meets it.
type esHeadReader struct {
	ctx      context.Context
	src      Source
	prefix   []byte
	off, end int64
	waiting  *atomic.Bool // set while it waits for the fill; nil: not told
	titleEnd bool         // it ended at the end of the title (io.EOF)
}

// errHeadEnd is esHeadReader's error at the end of the head.
var errHeadEnd = errors.New("deliver: end of the play's head")

func (r *esHeadReader) Read(p []byte) (int, error) {
	if len(r.prefix) > 0 {
		n := copy(p, r.prefix)
		r.prefix = r.prefix[n:]
		return n, nil
	}
	if r.off >= r.end {
		return 0, errHeadEnd
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
		r.titleEnd = true
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
// AC-3 entries of the PMTs (PID pid) of the PIDs in strip (nil: all) made
// of a reserved stream type, which mediacommon's reader takes for a track
// it does not read; off, it reads r as it is.
type noAudioPMT struct {
	r     io.Reader
	pid   uint16
	on    bool
	strip map[uint16]bool
}

func (f *noAudioPMT) Read(p []byte) (int, error) {
	if !f.on || len(p) < TSPacketSize {
		return f.r.Read(p)
	}
	n, err := io.ReadFull(f.r, p[:TSPacketSize])
	if n == TSPacketSize {
		stripAudioES(p[:n], f.pid, f.strip)
		return n, nil
	}
	return n, err
}

// stripAudioES gives the AAC (0x0F) and AC-3 (0x81) entries of the PMT
// section starting in TS packet pkt (PID pmtPID) whose PIDs are in strip
// (nil: all) the reserved stream type 0x00 and the section its CRC again;
// a section that does not end in the packet is left as it is.
func stripAudioES(pkt []byte, pmtPID uint16, strip map[uint16]bool) {
	sec, end := pmtSection(pkt, pmtPID)
	if sec == nil {
		return
	}
	changed := false
	for j := 12 + (int(sec[10]&0x0f)<<8 | int(sec[11])); j+5 <= end; j += 5 + (int(sec[j+3]&0x0f)<<8 | int(sec[j+4])) {
		pid := uint16(sec[j+1]&0x1f)<<8 | uint16(sec[j+2])
		if (sec[j] == 0x0f || sec[j] == 0x81) && (strip == nil || strip[pid]) {
			sec[j], changed = 0x00, true
		}
	}
	if changed {
		binary.BigEndian.PutUint32(sec[end:], crc32MPEG(sec[:end]))
	}
}

// audioAbsent returns the PIDs of the AAC and AC-3 tracks of the first
// PMT (PID pmtPID) in the play's head (TS packets, its prefix first;
// titleEnd: it ends at the title's end) that mediacommon's reader,
// initialising on it, would not find a whole PES packet of (pesFound),
// marked unsupported for the play (stripAudioES); nil, for all of them,
// when it finds one of each.
func audioAbsent(head []byte, pmtPID uint16, titleEnd bool) map[uint16]bool {
	absent := map[uint16]bool{}
	for pid, found := range pesFound(head, pmtPID, titleEnd) {
		if !found {
			absent[pid] = true
		}
	}
	if len(absent) == 0 {
		return nil
	}
	return absent
}

// pesFound returns, for each AAC and AC-3 track of the first PMT (PID
// pmtPID) among the TS packets head, whether mediacommon's reader,
// initialising on head, finds a whole PES packet of it, the tracks not
// found left out: the reader looks for one of each in PMT order, each
// from where the one before was found on (what comes before is passed
// over), and the demultiplexer (astits) hands a PES packet out when the
// next one of its PID starts, or, at the title's end (titleEnd), those it
// holds, by PID.
func pesFound(head []byte, pmtPID uint16, titleEnd bool) map[uint16]bool {
	var order []uint16         // the tracks, in PMT order
	var found map[uint16]bool  // nil until the PMT
	done := map[uint16][]int{} // per PID: where its PES packets are handed out (packet index)
	open := map[uint16]bool{}  // per PID: a PES packet started, not handed out
	n := 0
	for ; n+TSPacketSize <= len(head); n += TSPacketSize {
		p := head[n : n+TSPacketSize]
		if p[0] != 0x47 {
			break
		}
		pid := uint16(p[1]&0x1f)<<8 | uint16(p[2])
		if found == nil {
			if es := pmtEntries(p, pmtPID); es != nil {
				found = map[uint16]bool{}
				for _, e := range es {
					if (e.typ == 0x0f || e.typ == 0x81) && !slices.Contains(order, e.pid) {
						order = append(order, e.pid)
						found[e.pid] = false
					}
				}
				continue
			}
		}
		if p[1]&0x40 == 0 {
			continue
		}
		if open[pid] && found != nil {
			done[pid] = append(done[pid], n/TSPacketSize)
		}
		open[pid] = true
	}
	if found == nil {
		return nil
	}
	if titleEnd {
		at := n / TSPacketSize
		pids := slices.Sorted(maps.Keys(open))
		for _, pid := range pids {
			done[pid] = append(done[pid], at)
			at++
		}
	}
	from := -1
	for _, pid := range order {
		for _, at := range done[pid] {
			if at > from {
				found[pid], from = true, at
				break
			}
		}
	}
	return found
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
