package vodnode

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"vodcluster/cdp/tsindex"
	"vodcluster/vodnode/deliver"
	"vodcluster/vodnode/store"
)

// hlsTarget is the wanted HLS segment duration, seconds; segments are cut
// at the first keyframe at least this far from the previous cut (the
// origin measures its titles' longest segments with the same cuts).
const hlsTarget = tsindex.HLSSegmentTarget

// segment is one HLS segment: bytes [start, end) of the title.
type segment struct {
	start, end int64
	dur        float64 // seconds
	// discontinuity: the title's presentation times start again in or
	// right before the segment (a splice the index absorbed,
	// tsindex.PTSJump): its playlist entry carries EXT-X-DISCONTINUITY.
	discontinuity bool
}

// segments cuts the indexed part of a title at keyframes
// (tsindex.Index.Segments with hlsTarget): at the first one at least
// hlsTarget from the previous cut, and at the first one at or past each
// discontinuity of the presentation times (a splice), whose segment is
// marked (RFC 8216 §4.3.2.3 asks for the tag where the timestamps'
// sequence changes). The last segment, which runs to the end, is
// included only once complete. The cuts stay the same while a fill goes
// on.
func segments(idx *tsindex.Index, complete bool) []segment {
	cuts := idx.Segments(hlsTarget, complete)
	segs := make([]segment, len(cuts))
	for i, c := range cuts {
		segs[i] = segment{c.Start, c.End, c.Seconds, c.Discontinuity}
	}
	return segs
}

// waitSegments returns the segments of t once at least want of them exist
// or the title is complete, waiting for the fill up to requestTimeout.
func waitSegments(ctx context.Context, t *store.Title, want int) ([]segment, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	for {
		v := t.View()
		segs := segments(&v.Index, v.Complete)
		if len(segs) >= want || v.Complete || v.Err != nil {
			return segs, v.Complete, v.Err
		}
		if _, err := waitBytes(ctx, t, v.Index.Size); err != nil {
			return segs, false, err
		}
	}
}

// segmentsAtMost returns how many HLS segments title t can have at most,
// with ok, once that is known: t's own once complete; while it fills, the
// segments cut so far, the one being read, and for the rest of the
// title's play time (its Meta's duration, the origin's) one every
// hlsTarget (the least a cut is apart from the one before) and as many
// again for splices (each a cut of its own, which the bytes not filled
// yet may hold). Not known (ok false) for a title whose duration is not,
// nor once its fill failed (serveSegment answers that).
func segmentsAtMost(t *store.Title) (int, bool) {
	v := t.View()
	switch {
	case v.Err != nil:
		return 0, false
	case v.Complete:
		return len(segments(&v.Index, true)), true
	}
	return segmentsBound(&v.Index, t.Meta().Duration)
}

// segmentsBound is segmentsAtMost of a title of d seconds still filling,
// whose bytes so far idx indexes.
func segmentsBound(idx *tsindex.Index, d float64) (int, bool) {
	if d <= 0 || math.IsNaN(d) || math.IsInf(d, 0) {
		return 0, false
	}
	segs := segments(idx, false)
	cut := 0.0 // where the segment being read starts, seconds
	for _, s := range segs {
		cut += s.dur
	}
	rest := math.Max(d-cut, 0)
	if rest/hlsTarget > 1<<24 { // more than any segment number parseHTTPTarget takes
		return 0, false
	}
	// +1: the title's duration and its keyframes' times, measured apart,
	// may differ by a fraction of a second
	return len(segs) + 1 + 2*int(rest/hlsTarget) + 1, true
}

// servePlaylist answers the HLS media playlist (RFC 8216 §4.3): a VOD
// playlist once the title is complete, an EVENT playlist while it fills.
func (n *Node) servePlaylist(w http.ResponseWriter, r *http.Request, hs *httpSession) {
	segs, complete, err := waitSegments(r.Context(), hs.t(), 1)
	if err != nil && len(segs) == 0 {
		titleUnavailable(w, err)
		n.fillFailedEmpty(hs, err)
		return
	}
	if err == nil && !complete {
		segs, complete, err = waitListed(r.Context(), hs.t(), int(hs.hlsAsked.Load())+eventAhead)
	}
	all := len(segs)
	var b strings.Builder
	// A playlist's reloads may only append (RFC 8216 §6.2.1): the target
	// duration leaves room for segments longer than hlsTarget (cut at the
	// first keyframe past it), and holds the title's longest one as the
	// origin measured it, so it does not grow as the fill reveals them
	// (each EXTINF rounded must stay within it, §4.3.3.1); and a
	// viewer who was given an EVENT playlist while the title filled keeps
	// that type, its playlist completed, once the fill is, by every
	// segment and EXT-X-ENDLIST (an append): from then on it seeks
	// anywhere, as a VOD playlist's viewer does (it could only seek
	// within what eventShown listed, for the rest of the session).
	target := targetDuration(segs, hs.t().Meta().HLSSegmentMax)
	kind := "VOD"
	if !complete || hs.hlsEvent.Load() {
		kind = "EVENT"
		hs.hlsEvent.Store(true)
		if !complete {
			segs = segs[:eventShown(hs, len(segs))]
		}
	}
	fmt.Fprintf(&b, "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:%d\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:%s\n", int(target), kind)
	if kind == "EVENT" {
		// where the title starts, for the players that read it (§4.3.5.2;
		// see eventShown for the others)
		b.WriteString("#EXT-X-START:TIME-OFFSET=0,PRECISE=YES\n")
	}
	// Segment URIs are relative to the playlist's: a token in its path
	// (/s/<token>/...) carries over; one in its query does not (RFC 3986
	// §5.2.2), so it is written into each segment URI.
	query := ""
	if tok := r.URL.Query().Get("token"); tok != "" {
		query = "?token=" + url.QueryEscape(tok)
	}
	for i, s := range segs {
		if s.discontinuity {
			b.WriteString("#EXT-X-DISCONTINUITY\n")
		}
		fmt.Fprintf(&b, "#EXTINF:%.3f,\nseg-%d.ts%s\n", extinf(s.dur), i, query)
	}
	if (complete || err != nil) && len(segs) == all {
		// complete, or its fill failed: the player plays what there is,
		// then ends
		b.WriteString("#EXT-X-ENDLIST\n")
	}
	w.Header().Set("Content-Type", "application/vnd.apple.mpegurl")
	w.Header().Set("Cache-Control", "no-cache")
	serveContent(w, r, "index.m3u8", int64(b.Len()), "", strings.NewReader(b.String()))
}

// eventListWait bounds how long an EVENT playlist (a title being filled)
// waits, once its first segment is there, for the fill to reach the
// segments it lists (eventShown): a fill runs many times faster than
// play, and a playlist answered with the one segment filled so far kept
// players that reload a live playlist only after its target duration
// (8 s) waiting for the next: GStreamer's playbin started a title being
// filled 8.7 s late, VLC and mpv (--start) stalled 4 to 8 s.
const eventListWait = 2 * time.Second

// waitListed returns the segments of t once want of them exist, the title
// is complete or eventListWait has passed (those there then), or why the
// fill failed; ctx ending is its error.
func waitListed(ctx context.Context, t *store.Title, want int) ([]segment, bool, error) {
	wctx, cancel := context.WithTimeout(ctx, eventListWait)
	defer cancel()
	more, complete, err := waitSegments(wctx, t, want)
	if err != nil && ctx.Err() == nil && wctx.Err() != nil && t.View().Err == nil {
		return more, false, nil // the wait's bound, not the fill's failure
	}
	return more, complete, err
}

// eventAhead is how many segments an EVENT playlist lists past the
// highest one its viewer asked for (see eventShown).
const eventAhead = 3

// eventShown returns how many of the n segments readable now an EVENT
// playlist (a title being filled) lists to the viewer hs: up to
// eventAhead past the highest segment it asked for, never fewer than its
// last playlist listed (reloads only append, RFC 8216 §6.2.1). A
// playlist without EXT-X-ENDLIST is live to players, which start three
// segments (or target durations) before its end (§6.3.3: ffmpeg, VLC,
// hls.js): given every segment filled so far, a viewer joining a fill in
// progress started near the fill's edge and missed the title's beginning.
// Listed eventAhead at first, it starts at 0; a player coming back to
// the same session starts near where it was.
func eventShown(hs *httpSession, n int) int {
	want := int64(min(n, int(hs.hlsAsked.Load())+eventAhead))
	for {
		shown := hs.hlsShown.Load()
		if want <= shown {
			return int(min(shown, int64(n)))
		}
		if hs.hlsShown.CompareAndSwap(shown, want) {
			return int(want)
		}
	}
}

// serveSegment answers HLS segment i: its bytes, starting with a PAT and
// a PMT (RFC 8216 §3.2) when it does not start the title: the ones the mux
// put right before the segment's keyframe (ffmpeg's does), sent again, so
// that the tables' continuity counters stay continuous for a player that
// joins the segments; else the title's first ones.
func (n *Node) serveSegment(w http.ResponseWriter, r *http.Request, hs *httpSession, i int) {
	if most, ok := segmentsAtMost(hs.t()); ok && i >= most {
		// Past any the title can have: not waited for (the wait ended
		// in a 503 "not filled yet" while it filled, a 404 once complete).
		http.Error(w, "no such segment", http.StatusNotFound)
		return
	}
	segs, _, err := waitSegments(r.Context(), hs.t(), i+1)
	if i >= len(segs) {
		if err != nil {
			titleUnavailable(w, err)
			n.fillFailedEmpty(hs, err)
			return
		}
		http.Error(w, "no such segment", http.StatusNotFound)
		return
	}
	if last := hs.hlsLast.Swap(int64(i + 1)); last > 0 && (int64(i) > last || int64(i+2) < last) {
		// Neither the segment after the last asked for, nor that one
		// again, nor the one before it (two fetched at once, answered
		// out of order): the player jumped.
		hs.pacing.seeked(time.Now())
	}
	for asked := hs.hlsAsked.Load(); int64(i+1) > asked && !hs.hlsAsked.CompareAndSwap(asked, int64(i+1)); {
		asked = hs.hlsAsked.Load()
	}
	s := segs[i]
	var psi []byte
	if s.start > 0 {
		idx := &hs.t().View().Index
		if at := psiRunBefore(hs.t(), idx, s.start); at < s.start {
			s.start = at // the stream's own tables, continuity counters and all
		} else {
			psi = deliver.ReadPSI(hs.t(), idx)
			deliver.ContinuePSI(psi, hs.t(), s.start, idx.PMTPID) // one sequence with the segment's own tables
		}
	}
	// Read from the title as it is sent (not buffered: a segment of a
	// title with few keyframes can be large, and a viewer may ask for
	// several at once).
	seg := segmentAt{psi: psi, t: hs.t(), start: s.start}
	w.Header().Set("Content-Type", "video/mp2t")
	rd := &pacedSection{rd: io.NewSectionReader(seg, 0, int64(len(psi))+s.end-s.start), seg: seg, hs: hs, n: n, ctx: r.Context(),
		conn: httpConnOf(r.Context()), rc: http.NewResponseController(w), stall: n.SessionTimeout, sendfile: n.HTTPTLS == nil}
	serveContent(w, r, fmt.Sprintf("seg-%d.ts", i), rd.rd.Size(), segmentETag(hs.t().Meta(), i, s.start, s.end, len(psi)), rd)
}

// segmentAt is an HLS segment as an io.ReaderAt: psi, then the title's
// bytes from start.
type segmentAt struct {
	psi   []byte
	t     io.ReaderAt
	start int64
}

func (s segmentAt) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	if off < int64(len(s.psi)) {
		n = copy(b, s.psi[off:])
		if n == len(b) {
			return n, nil
		}
		off = int64(len(s.psi))
	}
	m, err := s.t.ReadAt(b[n:], s.start+off-int64(len(s.psi)))
	return n + m, err
}

// pacedSection serves a section (a segment) at its viewer's pace,
// counting the bytes as sent. With rc, each read gives the write of what
// it returns stall to complete, as titleReader's do (a player that stops
// reading is disconnected after stall).
type pacedSection struct {
	rd    *io.SectionReader
	seg   segmentAt // what rd reads
	pos   int64
	hs    *httpSession
	n     *Node
	ctx   context.Context
	conn  *httpConn // the request's (nil: not known), as titleReader's
	rc    *http.ResponseController
	stall time.Duration
	// sendfile: activityWriter.ReadFrom may send the title's bytes with
	// sendfile(2) (httpsend.go); not over TLS.
	sendfile bool
}

func (p *pacedSection) Seek(off int64, whence int) (int64, error) {
	pos, err := p.rd.Seek(off, whence)
	if err == nil {
		p.pos = pos
	}
	return pos, err
}

func (p *pacedSection) Read(b []byte) (int, error) {
	k, err := p.next(len(b))
	if err != nil {
		return 0, err
	}
	n, err := p.rd.Read(b[:k])
	if n == k {
		err = nil // k is within the section
	} else if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the file shorter than its index
		}
		p.n.diskReadError(p.hs, p.seg.start+max(p.pos+int64(n)-int64(len(p.seg.psi)), 0), err)
	}
	p.deadline()
	p.advance(n)
	return n, err
}

// deadline gives the write of the bytes next allowed stall to complete.
func (p *pacedSection) deadline() {
	if p.rc != nil && p.stall > 0 {
		_ = p.rc.SetWriteDeadline(time.Now().Add(p.stall))
	}
}

// next returns how many bytes (at most want, and 64 KiB) may be sent from
// p.pos now that the viewer's pace allows them: io.EOF at the section's
// end; the context's error once the session ended or the client left.
func (p *pacedSection) next(want int) (int, error) {
	left := p.rd.Size() - p.pos
	k := int(min(int64(want), 64<<10, max(left, 0)))
	if k == 0 {
		return 0, io.EOF
	}
	if err := p.ctx.Err(); err != nil {
		return 0, err // the session ended, or the client left
	}
	if err := p.hs.pacing.wait(p.ctx, k); err != nil {
		return 0, err
	}
	return k, nil
}

// advance counts n bytes sent from p.pos.
func (p *pacedSection) advance(n int) {
	p.pos += int64(n)
	p.conn.countSent(p.n, p.hs, int64(n))
}

// psiRunBefore returns the offset of the run of PAT and PMT packets (both)
// that ends at off, within a few packets; off when there is none.
func psiRunBefore(r io.ReaderAt, idx *tsindex.Index, off int64) int64 {
	const look = 8 // packets
	from := max(off-look*tsindex.PacketSize, 0)
	buf := make([]byte, off-from)
	if n, _ := r.ReadAt(buf, from); n != len(buf) {
		return off
	}
	start, pat, pmt := off, false, false
run:
	for p := len(buf) - tsindex.PacketSize; p >= 0; p -= tsindex.PacketSize {
		b := buf[p:]
		pid := uint16(b[1]&0x1f)<<8 | uint16(b[2])
		switch {
		case b[0] != 0x47:
			return off
		case pid == 0:
			pat = true
		case pid == idx.PMTPID && pid != 0:
			pmt = true
		default:
			break run
		}
		start = from + int64(p)
	}
	if pat && pmt {
		return start
	}
	return off
}

// extinf is a segment's duration of dur seconds as its EXTINF gives it:
// to the millisecond.
func extinf(dur float64) float64 { return math.Round(dur*1000) / 1000 }

// targetDuration returns a playlist's EXT-X-TARGETDURATION, seconds: 2 ×
// hlsTarget, or more for a segment whose EXTINF, rounded to the nearest
// integer, is more (RFC 8216 §4.3.3.1): rounded as written (8.4996 s is
// written 8.500, which rounds to 9, not 8); longest is the longest segment
// the title has, seconds (store.Meta.HLSSegmentMax: the origin's measure
// of the whole title), taken as such a segment, 0 when unknown. Given it,
// a playlist of a title being filled declares the target of the whole
// title's, which its reloads keep (§6.2.1) as the fill reveals longer
// segments (keyframes 10 s apart); without it, only segs count.
func targetDuration(segs []segment, longest float64) float64 {
	target := math.Max(2*hlsTarget, math.Round(extinf(longest)))
	for _, s := range segs {
		target = math.Max(target, math.Round(extinf(s.dur)))
	}
	return target
}
