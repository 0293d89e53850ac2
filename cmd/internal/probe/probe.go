// Package probe is the project's own playback client: it plays a title
// from an RTSP URL (following the front door's redirect, as a set-top box
// does), demultiplexes the MPEG-TS it receives, or depacketizes the H.264,
// H.265 and AAC tracks of an elementary-stream URL (/es), and reports what
// arrived: video frames (access units), audio frames, seconds of media (by
// the PCR inside the MPEG-TS, or the video's RTP clock), wall seconds and
// bit/s. `vodctl play` and `vodcluster up --play` use it.
package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bluenviron/gortsplib/v4"
	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/bluenviron/gortsplib/v4/pkg/description"
	"github.com/bluenviron/gortsplib/v4/pkg/format"
	"github.com/bluenviron/gortsplib/v4/pkg/liberrors"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"vodcluster/cdp/tsindex"
	"vodcluster/proto/durtext"
	"vodcluster/proto/monotime"
)

// Options says how to play.
type Options struct {
	Transport string        // "tcp" (default) or "udp"
	Duration  time.Duration // how long to play; 0 = until the stream ends
	// Idle ends the play when no packet arrived for this long after the
	// first one; default 3 s. Without the server's RTCP BYE at the end of
	// the title, the play is reported stopped early (Result.Stopped).
	Idle time.Duration
	// TLSConfig verifies rtsps:// servers (the front door's and the
	// node's certificates); nil: the system's roots.
	TLSConfig *tls.Config
}

// Result is what a play received. Its JSON keys are lowerCamelCase, as
// the JSON of the admin API's messages (protojson) that every other
// `vodctl --json` prints: durationS there, mediaS here.
type Result struct {
	URL          string  `json:"url"`         // the URL asked for, its password and tokens (?token=, a node URL's /s/TOKEN/) replaced by xxxxx
	Server       string  `json:"server"`      // host:port that finally served the stream (after redirects)
	VideoFrames  int     `json:"videoFrames"` // H.264/H.265 access units demultiplexed from the stream
	AudioFrames  int     `json:"audioFrames"` // AAC access units
	MediaSeconds float64 `json:"mediaS"`      // span of the PCRs received (elementary streams: of the video's RTP timestamps), seconds
	WallSeconds  float64 `json:"wallS"`       // from PLAY's reply to the last packet, seconds
	Bytes        int64   `json:"bytes"`       // RTP payload bytes received
	Packets      int64   `json:"packets"`     // RTP packets received
	SetupSeconds float64 `json:"setupS"`      // connect .. PLAY reply, seconds
	// Stopped says why the play stopped before its duration or the end
	// of the title: the client's connection to the server failed, or the
	// server closed it (a pulled cable over UDP: "… network is
	// unreachable"), or the server ended the session with an RTCP BYE
	// giving another reason than the end of the title (an operator's
	// `vodctl sessions end`: its --reason), or no packet came for
	// Options.Idle with no RTCP BYE (a stream that froze; a server that
	// sends no BYE at the end of the title reads so too). Empty for a
	// play that ran its course.
	Stopped string `json:"stopped,omitempty"`
}

// BitrateBps returns the received payload rate over the wall time, bit/s.
func (r Result) BitrateBps() float64 {
	if r.WallSeconds <= 0 {
		return 0
	}
	return float64(r.Bytes) * 8 / r.WallSeconds
}

// RealTimeRatio returns media seconds per wall second (1.0 = real time).
func (r Result) RealTimeRatio() float64 {
	if r.WallSeconds <= 0 {
		return 0
	}
	return r.MediaSeconds / r.WallSeconds
}

// String renders the result on one line for people.
func (r Result) String() string {
	line := fmt.Sprintf("played %s from %s: %d video frames, %d audio frames, %.2f s of media in %.2f s (%.2fx real time), %.0f kbit/s, setup %.0f ms",
		r.URL, r.Server, r.VideoFrames, r.AudioFrames, r.MediaSeconds, r.WallSeconds, r.RealTimeRatio(),
		r.BitrateBps()/1000, r.SetupSeconds*1000)
	if r.Stopped != "" {
		line += "; stopped early: " + r.Stopped
	}
	return line
}

// endOfTitleBye is the reason of a node's RTCP BYE at the end of the
// title (vodnode/deliver): a play that ran its course.
const endOfTitleBye = "end of title"

// byeIdle is how long a play waits for packets in flight after the
// server's RTCP BYE before it ends (Options.Idle, shortened).
const byeIdle = 500 * time.Millisecond

// ErrNoMPEGTS is returned when the server offers neither MPEG-TS (payload
// 33) nor H.264/H.265/AAC elementary-stream media.
var ErrNoMPEGTS = errors.New("probe: the stream has neither MPEG-TS nor H.264, H.265 or AAC media")

// ErrStopped is returned when the context of Play ends before the
// server answered PLAY: nothing was played (a session already set up is
// torn down).
var ErrStopped = errors.New("probe: stopped")

// StoppedError is the error of a play whose context ended before the
// server answered PLAY: errors.Is(err, ErrStopped) holds. Its text is
// "probe: stopped before PLAY's answer (CAUSE): " and the request's
// error, as "DESCRIBE: terminated".
type StoppedError struct {
	Step  string // the request waiting for its answer: DESCRIBE, SETUP or PLAY
	Cause error  // context.Cause of the play's context
	text  string
}

// Error returns the line described at StoppedError.
func (e *StoppedError) Error() string { return e.text }

// Is reports whether target is ErrStopped.
func (e *StoppedError) Is(target error) bool { return target == ErrStopped }

// Unwrap returns Cause.
func (e *StoppedError) Unwrap() error { return e.Cause }

// RedirectedError is a DESCRIBE that failed at the host the front door's
// RTSP redirect (302) named, the node, rather than at the URL's: the node
// could not be reached at the address it advertises, or it refused or
// closed the request. Err is the probe's error; its text is the error's.
type RedirectedError struct {
	Host string // host:port the redirect named (the node's advertised RTSP address)
	Err  error
}

// Error returns Err's text.
func (e *RedirectedError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *RedirectedError) Unwrap() error { return e.Err }

// Play plays rawURL until opts.Duration, the end of the stream or ctx ends.
// ctx ending before PLAY's answer stops it at once with ErrStopped (a
// *StoppedError naming the request and the cause).
// Errors: a bad URL (one without a host too), transport or negative
// Duration, a refused request (the error carries the RTSP status, e.g.
// 401, 403, 404, 453), ErrNoMPEGTS, ErrStopped, or a transport failure;
// a DESCRIBE that failed at the node the front door redirected to is a
// *RedirectedError naming it.
func Play(ctx context.Context, rawURL string, opts Options) (Result, error) {
	res := Result{URL: redacted(rawURL)}
	if opts.Duration < 0 {
		return res, fmt.Errorf("probe: duration %s is negative (0 plays to the end)", durtext.Written(opts.Duration))
	}
	if scheme, _, ok := strings.Cut(rawURL, "://"); !ok {
		// Quoted as the result names it: a URL given without its scheme
		// still carries its token or password.
		return res, fmt.Errorf("probe: %q is not a URL: want rtsp://[USER:PASSWORD@]HOST:PORT/vod/TITLE (or rtsps://)", res.URL)
	} else if s := strings.ToLower(scheme); s != "rtsp" && s != "rtsps" {
		return res, fmt.Errorf("probe: this client plays RTSP (rtsp:// or rtsps://), not %s://; play HTTP and HLS URLs with ffmpeg, ffplay or VLC", scheme)
	}
	u, err := base.ParseURL(rawURL)
	if err != nil {
		return res, parseError(rawURL, res.URL, err)
	}
	if passwordSpills(rawURL, (*url.URL)(u)) {
		// It dialled what followed the password's first '@' as the host,
		// or what preceded its ':' ("demo:93/kw@HOST": host demo, port 93).
		return res, fmt.Errorf("probe: parse %q: %s%s", res.URL, badPassword, queryAtHint((*url.URL)(u)))
	}
	if (*url.URL)(u).Hostname() == "" {
		// rtsp:///vod/TITLE, rtsp://USER:PASSWORD@/..., rtsp://:8554/...:
		// the client dialed the local host (on 554, 322 or the port given).
		return res, fmt.Errorf("probe: %q has no host: want rtsp://[USER:PASSWORD@]HOST:PORT/vod/TITLE (or rtsps://); the front door on this machine, by default: rtsp://127.0.0.1:8554/vod/TITLE", res.URL)
	}
	tr := gortsplib.TransportTCP
	switch opts.Transport {
	case "", "tcp":
	case "udp":
		tr = gortsplib.TransportUDP
	default:
		return res, fmt.Errorf("probe: transport %q: want tcp or udp", opts.Transport)
	}
	if opts.Idle <= 0 {
		opts.Idle = 3 * time.Second
	}
	c := &gortsplib.Client{Scheme: u.Scheme, Host: u.Host, Transport: &tr, TLSConfig: opts.TLSConfig}
	start := time.Now()
	if err := c.Start2(); err != nil {
		return res, fmt.Errorf("probe: %w", err)
	}
	defer c.Close()
	// ctx ending before PLAY's answer closes the client at once: the
	// request in flight returns (it waited for the server's answer, up to
	// the client's 10 s read timeout a request), and a session set up is
	// torn down.
	stopEarly := context.AfterFunc(ctx, c.Close)
	defer stopEarly()
	early := func(step string, err error) error {
		if ctx.Err() != nil {
			// One "probe: " at the head: the request's error after it
			// without its own ("…: probe: DESCRIBE: …" kept the inner
			// one in vodctl's line, which strips the first).
			cause := context.Cause(ctx)
			return &StoppedError{Step: step, Cause: cause,
				text: fmt.Sprintf("%v before PLAY's answer (%v): %s", ErrStopped, cause, strings.TrimPrefix(err.Error(), "probe: "))}
		}
		return err
	}
	desc, answer, err := c.Describe(u)
	if err != nil {
		hint := unauthorizedHint(u, answer) + sessionLimitHint(u, answer) + loginLockHint(u, answer)
		if c.Host != u.Host {
			// The node's answer, after the front door's redirect: not
			// about u's credentials. Its failure is the node's: read as
			// the front door's, a node advertising an address players
			// cannot reach was "cannot reach the manager".
			hint = redirectRefusalHint(c.Host, answer, err)
			return res, early("DESCRIBE", &RedirectedError{Host: c.Host, Err: fmt.Errorf("probe: DESCRIBE: %w%s", err, hint)})
		}
		return res, early("DESCRIBE", fmt.Errorf("probe: DESCRIBE: %w%s", err, hint))
	}
	res.Server = c.Host
	var packets, bytes atomic.Int64
	var last atomic.Int64 // monotime.Now of the last packet
	got := make(chan struct{}, 1)
	onPacket := func(pkt *rtp.Packet) {
		packets.Add(1)
		bytes.Add(int64(len(pkt.Payload)))
		last.Store(monotime.Now())
		select {
		case got <- struct{}{}:
		default:
		}
	}
	counter, err := setupCounter(c, desc, onPacket)
	if err != nil {
		return res, early("SETUP", err)
	}
	defer counter.close()
	// The server's RTCP BYE (RFC 3550 §6.6): nothing more comes after it,
	// at the end of the title or when the server ended the session.
	var bye atomic.Pointer[string]
	c.OnPacketRTCPAny(func(_ *description.Media, p rtcp.Packet) {
		if g, ok := p.(*rtcp.Goodbye); ok {
			r := g.Reason
			bye.CompareAndSwap(nil, &r)
		}
	})
	if _, err := c.Play(nil); err != nil {
		return res, early("PLAY", fmt.Errorf("probe: PLAY: %w", err))
	}
	// Played: the host dialled was the one parsed, so an '@' after the
	// title's path is the query's or fragment's own, not a password's end
	// (atMayEndPassword hid all up to it, "rtsp://demo:xxxxx@b" for
	// rtsp://demo:PW@HOST/vod/x?from=a@b): only the password and tokens
	// are hidden now.
	res.URL = playedURL(rawURL, (*url.URL)(u))
	stopEarly() // from here ctx ends the play as its Duration does
	played := time.Now()
	res.SetupSeconds = played.Sub(start).Seconds()

	var deadline <-chan time.Time
	if opts.Duration > 0 {
		t := time.NewTimer(opts.Duration)
		defer t.Stop()
		deadline = t.C
	}
	idle := time.NewTicker(min(opts.Idle/4, byeIdle/2))
	defer idle.Stop()
	waitErr := make(chan error, 1)
	go func() { waitErr <- c.Wait() }()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-deadline:
			break loop
		case err := <-waitErr:
			if packets.Load() == 0 {
				return res, fmt.Errorf("probe: session ended before any media: %w", err)
			}
			// It ended the play as if it had run its course: a play to
			// the end cut by a 3 s network outage read as a whole one.
			res.Stopped = connectionEnded(err)
			break loop
		case <-got:
		case <-idle.C:
			l := last.Load()
			limit := opts.Idle
			if r := bye.Load(); r != nil {
				if l == 0 {
					return res, fmt.Errorf("probe: the server ended the session before any media (RTCP BYE %q)", *r)
				}
				limit = min(limit, byeIdle)
			}
			if l == 0 {
				if time.Since(played) > 10*time.Second {
					return res, errors.New("probe: no media within 10 s of PLAY")
				}
				continue
			}
			if monotime.Since(l) > limit {
				if bye.Load() == nil {
					// No end of title: a stream that froze (a node whose
					// fill waits for the origin) read as a whole play.
					res.Stopped = fmt.Sprintf("no packet for %s, and no end of title from the server (RTCP BYE)", durtext.Written(limit))
				}
				break loop
			}
		}
	}
	if r := bye.Load(); r != nil && *r != endOfTitleBye && res.Stopped == "" {
		res.Stopped = fmt.Sprintf("the server ended the session (RTCP BYE %q)", *r)
	}
	c.Close()
	counter.close()
	res.Packets = packets.Load()
	res.Bytes = bytes.Load()
	if l := last.Load(); l > 0 {
		res.WallSeconds = monotime.Time(l).Sub(played).Seconds()
	}
	res.VideoFrames, res.AudioFrames, res.MediaSeconds = counter.result()
	return res, nil
}

// counter counts what a play received: video and audio access units and
// seconds of media.
type counter interface {
	result() (video, audio int, seconds float64)
	close() // idempotent
}

// setupCounter sets up the media of desc the probe can count, MPEG-TS
// (the node's default: one media, payload 33) or else elementary streams
// (H.264/H.265 video, AAC audio: the node's /es URLs), with onPacket
// called on every RTP packet. ErrNoMPEGTS when desc has neither.
func setupCounter(c *gortsplib.Client, desc *description.Session, onPacket func(*rtp.Packet)) (counter, error) {
	for _, m := range desc.Medias {
		for _, f := range m.Formats {
			ts, ok := f.(*format.MPEGTS)
			if !ok {
				continue
			}
			if _, err := c.Setup(desc.BaseURL, m, 0, 0); err != nil {
				return nil, fmt.Errorf("probe: SETUP: %w%s", err, setupRefusalHint(c, err))
			}
			pr, pw := io.Pipe()
			d := newDemux(pr)
			c.OnPacketRTP(m, ts, func(pkt *rtp.Packet) {
				onPacket(pkt)
				d.feed(pkt.Payload)
				pw.Write(pkt.Payload) //nolint:errcheck // the demuxer ends with the pipe
			})
			return &tsCounter{d: d, pw: pw}, nil
		}
	}
	return setupES(c, desc, onPacket)
}

// setupRefusalHint says, for a SETUP of c refused 461 Unsupported
// Transport (err), what it means and, asked over UDP, what to do: the
// status line alone, "461 (Unsupported Transport)", said neither (the
// client drops the node's reason, given in the body). "" for other errors.
func setupRefusalHint(c *gortsplib.Client, err error) string {
	var bad liberrors.ErrClientBadStatusCode
	if !errors.As(err, &bad) || bad.Code != base.StatusUnsupportedTransport {
		return ""
	}
	if c.Transport != nil && *c.Transport == gortsplib.TransportTCP {
		return ": the server does not send this media interleaved in the RTSP connection"
	}
	return ": the server does not send the media over UDP (a node with tcp_only, or one asked over RTSPS, sends over TCP only); play over TCP (vodctl play --transport tcp, the default)"
}

// tsCounter is the counter of an MPEG-TS play.
type tsCounter struct {
	d    *demux
	pw   *io.PipeWriter
	once sync.Once
}

func (t *tsCounter) close() {
	t.once.Do(func() {
		t.pw.Close()
		t.d.wait()
	})
}

func (t *tsCounter) result() (int, int, float64) { return t.d.result() }

// demux counts access units with mediacommon's MPEG-TS reader and the PCR
// span with tsindex.
type demux struct {
	mu          sync.Mutex
	idx         *tsindex.Builder
	video, audi int
	done        chan struct{}
}

func newDemux(r io.Reader) *demux {
	d := &demux{idx: tsindex.NewBuilder(), done: make(chan struct{})}
	go d.run(r)
	return d
}

func (d *demux) feed(p []byte) {
	d.mu.Lock()
	d.idx.Write(p) //nolint:errcheck // a sync loss only stops the clock count
	d.mu.Unlock()
}

func (d *demux) run(r io.Reader) {
	defer close(d.done)
	defer io.Copy(io.Discard, r) //nolint:errcheck // drain so the writer never blocks
	mr := &mpegts.Reader{R: r}
	if err := mr.Initialize(); err != nil {
		return
	}
	mr.OnDecodeError(func(error) {})
	for _, t := range mr.Tracks() {
		switch t.Codec.(type) {
		case *mpegts.CodecH264:
			mr.OnDataH264(t, func(_, _ int64, _ [][]byte) error {
				d.mu.Lock()
				d.video++
				d.mu.Unlock()
				return nil
			})
		case *mpegts.CodecH265:
			mr.OnDataH265(t, func(_, _ int64, _ [][]byte) error {
				d.mu.Lock()
				d.video++
				d.mu.Unlock()
				return nil
			})
		case *mpegts.CodecMPEG4Audio:
			mr.OnDataMPEG4Audio(t, func(_ int64, aus [][]byte) error {
				d.mu.Lock()
				d.audi += len(aus)
				d.mu.Unlock()
				return nil
			})
		}
	}
	for mr.Read() == nil {
	}
}

func (d *demux) wait() {
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
	}
}

func (d *demux) result() (video, audio int, seconds float64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	x := d.idx.Index()
	if n := len(x.PCRs); n >= 2 {
		seconds = float64(x.PCRs[n-1].PCR-x.PCRs[0].PCR) / tsindex.PCRHz
	}
	return d.video, d.audi, seconds
}

// PlayContext is Play with a timeout of opts.Duration + 30 s; with
// Duration 0 (to the end of the title) there is no overall timeout: the
// play ends when the stream does (opts.Idle without a packet).
func PlayContext(rawURL string, opts Options) (Result, error) {
	if opts.Duration == 0 {
		return Play(context.Background(), rawURL, opts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.Duration+30*time.Second)
	defer cancel()
	return Play(ctx, rawURL, opts)
}

// connectionEnded says why the client's connection ended with err, in
// the words of a play's report: io.EOF (the server, or a node that died,
// closed the connection: it read as "EOF") and a reset are named; any
// other error is given as it is.
func connectionEnded(err error) string {
	switch {
	case errors.Is(err, io.EOF):
		return "the server closed the connection"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the server closed the connection within a message"
	case errors.Is(err, syscall.ECONNRESET):
		return "the server reset the connection"
	case err == nil:
		return "the connection ended"
	}
	return err.Error()
}
