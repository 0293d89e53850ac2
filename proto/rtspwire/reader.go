package rtspwire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// Limits of what a client may send in one message.
const (
	MaxRequestHead = 16 << 10  // request line and headers, bytes
	MaxRequestBody = 128 << 10 // Content-Length, bytes
)

// Reader splits what a client sends on its RTSP connection into
// requests (parsed by gortsplib's base.Request), interleaved frames and
// stray responses. Unlike gortsplib's conn.Conn it never skips bytes it
// does not understand, nor waits for a delimiter that will not come: a
// message that is not a well-formed RTSP/1.0 request (RFC 2326 §6: token
// method, three-part request line) is a *FramingError as soon as that is
// clear, after which the stream cannot be trusted. Lines may end in CRLF
// or in a bare LF (RFC 2326 §4: receivers should take CR and LF by
// themselves as line ends; what a client typed into nc, or an embedded
// client's, sends LF): the head is given to gortsplib's parser with CRLF.
// A bare CR inside the head, the other form of §4, is refused: no client
// sends it, and it would end a line for one parser and not for another.
// Limits: a request head of MaxRequestHead bytes, a body of MaxRequestBody.
type Reader struct {
	br *bufio.Reader
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, MaxRequestHead)}
}

// FramingError is a message that cannot be read, or a request that did not
// arrive whole before the connection's read deadline (Code 408, Next): a
// server answers it with Code (and the CSeq, when one could be found: ""
// otherwise) and closes the connection.
type FramingError struct {
	Code   base.StatusCode
	Reason string
	CSeq   string
}

// Error returns the status code and reason, e.g. "400 not an RTSP request".
func (e *FramingError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Reason) }

// Frame is an interleaved frame from the client (RTCP receiver reports,
// RFC 2326 §10.12); only its channel is kept.
type Frame struct{ Channel int }

// Response is an RTSP response from the client: servers that send no
// requests ignore it (Next returns it so that a caller waits for the
// next message as after any other).
type Response struct{}

// maxBlankBytes bounds the CR and LF bytes skipped before one message
// (Next): more is not an RTSP client's.
const maxBlankBytes = 1024

// Next returns the next *base.Request or Frame. Responses from the client
// are read and dropped (the servers send no requests), and so are empty
// lines before a message, up to maxBlankBytes (RFC 7230 §3.5, which RTSP
// 2.0 takes up: a CRLF some clients send after a request's body, or as a
// keepalive, is not an error). Errors: the connection's read error, or a
// *FramingError. A read deadline that passes once a request's first byte
// is in (a request line, or a response's status line: anything but an
// interleaved frame) is a *FramingError 408 Request Timeout (RFC 2326
// §7.1.1), with the CSeq of the header lines already whole; one that
// passes before (the connection idle, blank lines aside: Wait) or inside
// an interleaved frame is the read error as it is. After any error the
// Reader is not to be used again: a read error inside a message may have
// consumed part of it (a body, a frame), and the next byte is not a
// message's first.
func (r *Reader) Next() (any, error) {
	blank := 0
	for {
		b, err := r.br.Peek(1)
		if err != nil {
			return nil, err
		}
		switch {
		case (b[0] == '\r' || b[0] == '\n') && blank < maxBlankBytes:
			r.br.Discard(1)
			blank++
			continue
		case b[0] == base.InterleavedFrameMagicByte:
			h, err := r.br.Peek(4)
			if err != nil {
				return nil, err
			}
			ch, size := int(h[1]), int(h[2])<<8|int(h[3])
			if _, err := r.br.Discard(4 + size); err != nil {
				return nil, err
			}
			return Frame{Channel: ch}, nil
		case !isTokenChar(b[0]):
			return nil, &FramingError{Code: base.StatusBadRequest, Reason: "not an RTSP request"}
		}
		head, err := r.head()
		if err != nil {
			return nil, err
		}
		if bytes.HasPrefix(head, []byte("RTSP/")) {
			if _, err := r.body(head); err != nil {
				return nil, cut(err, cseqOf(head))
			}
			// A response (to nothing these servers ask): ignored, but
			// returned, so that the caller waits for the next message
			// under its idle rules, not under this one's deadline.
			return Response{}, nil
		}
		body, err := r.body(head)
		if err != nil {
			return nil, cut(err, cseqOf(head))
		}
		var req base.Request
		msg := io.MultiReader(bytes.NewReader(head), bytes.NewReader(body))
		if err := req.Unmarshal(bufio.NewReader(msg)); err != nil {
			reason := err.Error()
			if lengthErr(reason) {
				if why := overLimit(head); why != "" {
					reason = why // gortsplib says "buffer length exceeds 2048"
				}
			}
			return nil, &FramingError{Code: base.StatusBadRequest, Reason: reason, CSeq: cseqOf(head)}
		}
		if req.Body == nil && len(body) > 0 {
			req.Body = body // its length repeated: gortsplib reads none
		}
		return &req, nil
	}
}

// Wait blocks until the first byte of the next message has arrived (it
// stays buffered for Next) or reading fails, and returns the read error:
// a server tells by it a connection idle between messages from one with
// a message in flight, which it should not cut but may give a read
// deadline of its own (Next: a request cut by it is a 408). Empty lines
// between messages (Next) are read and dropped: a connection that sends
// only CRLFs is idle.
func (r *Reader) Wait() error {
	for {
		b, err := r.br.Peek(1)
		if err != nil || (b[0] != '\r' && b[0] != '\n') {
			return err
		}
		r.br.Discard(1)
	}
}

// head consumes and returns the request line and headers, up to and
// including the empty line, checking the request line as soon as it is in.
func (r *Reader) head() ([]byte, error) {
	lineOK := false
	for {
		buf, _ := r.br.Peek(r.br.Buffered())
		if !lineOK {
			if i := bytes.IndexByte(buf, '\n'); i >= 0 {
				if err := checkRequestLine(buf[:i+1]); err != nil {
					err.CSeq = cseqOf(buf)
					return nil, err
				}
				lineOK = true
			}
		}
		if lineOK {
			if n := headEnd(buf); n > 0 {
				head := buf[:n]
				if bareCR(head) {
					return nil, &FramingError{Code: base.StatusBadRequest, Reason: "CR inside a header line", CSeq: cseqOf(head)}
				}
				out := withCRLF(head)
				r.br.Discard(n)
				return out, nil
			}
		}
		if len(buf) >= MaxRequestHead {
			return nil, &FramingError{Code: base.StatusBadRequest, Reason: "request head too large", CSeq: cseqOf(buf)}
		}
		if _, err := r.br.Peek(len(buf) + 1); err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			in, _ := r.br.Peek(r.br.Buffered()) // buf's bytes may have moved
			return nil, cut(err, cseqOf(in[:bytes.LastIndexByte(in, '\n')+1]))
		}
	}
}

// cut is the error of a read that failed inside a request (or a
// response) whose first byte was in, cseq its CSeq when a whole header
// line gave one: the read deadline having passed (os.ErrDeadlineExceeded:
// the request did not arrive whole in time, as a client sending its head
// a byte at a time does) is a 408 *FramingError; any other read error
// (the client gone) is returned as it is.
func cut(err error, cseq string) error {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	return &FramingError{Code: base.StatusRequestTimeout, Reason: "request not received whole in time", CSeq: cseq}
}

// Limits of gortsplib's base.Request parser within a request head, bytes:
// the Request-URI, a header's name and a header's value. A subscriber
// token (Authorization: Bearer, or ?token= in the URL) must fit in them.
const (
	MaxURI         = 2047
	MaxHeaderName  = 511
	MaxHeaderValue = 2047
)

// lengthErr reports whether reason, gortsplib's error for a request
// head, is for a request URL or header value too long ("buffer length
// exceeds 2048") or a header name ("value is missing": no ':' within
// its limit), the errors overLimit names the part of. Its other errors
// (a method or protocol too long, too many headers, a URL that does
// not parse) are given as they are, whatever else is long.
func lengthErr(reason string) bool {
	return strings.HasSuffix(reason, fmt.Sprintf("exceeds %d", MaxURI+1)) || reason == "value is missing"
}

// overLimit names the part of head (request line, headers) that is
// longer than gortsplib's parser takes, "" when none is: its error
// ("buffer length exceeds 2048") names no header.
func overLimit(head []byte) string {
	lines := strings.Split(strings.TrimRight(string(head), "\r\n"), "\n")
	if parts := strings.Split(strings.TrimSuffix(lines[0], "\r"), " "); len(parts) == 3 && len(parts[1]) > MaxURI {
		return fmt.Sprintf("request URL of %d bytes, longer than %d", len(parts[1]), MaxURI)
	}
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(strings.TrimSuffix(l, "\r"), ":")
		switch {
		case !ok:
		case len(name) > MaxHeaderName:
			return fmt.Sprintf("header name of %d bytes, longer than %d", len(name), MaxHeaderName)
		case len(strings.TrimLeft(value, " ")) > MaxHeaderValue:
			return fmt.Sprintf("header %s of %d bytes, longer than %d", clipName(name), len(strings.TrimLeft(value, " ")), MaxHeaderValue)
		}
	}
	return ""
}

// clipName is a header name fit for a reason phrase: at most 40 bytes of
// token characters (RFC 2326 §15.1), "?" for any other.
func clipName(name string) string {
	if len(name) > 40 {
		name = name[:40]
	}
	b := []byte(name)
	for i, c := range b {
		if !isTokenChar(c) {
			b[i] = '?'
		}
	}
	return string(b)
}

// body consumes and returns the body that head announces (Content-Length).
func (r *Reader) body(head []byte) ([]byte, error) {
	vs := headerValues(head, "content-length")
	if len(vs) == 0 {
		return nil, nil
	}
	n, err := strconv.ParseUint(vs[0], 10, 32)
	if err != nil || n > MaxRequestBody {
		return nil, &FramingError{Code: base.StatusBadRequest, Reason: "invalid Content-Length", CSeq: cseqOf(head)}
	}
	for _, v := range vs[1:] {
		// Two lengths that differ (RFC 9112 §6.3: the message's end
		// cannot be told, so a part of it could be read as another
		// request): unreadable; the same one repeated is that length.
		if v != vs[0] {
			return nil, &FramingError{Code: base.StatusBadRequest, Reason: "conflicting Content-Length", CSeq: cseqOf(head)}
		}
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.br, b); err != nil {
		return nil, err
	}
	return b, nil
}

// checkRequestLine checks "Method SP Request-URI SP RTSP-Version CRLF"
// (RFC 2326 §6.1; LF alone ends it too), or a response's status line.
func checkRequestLine(line []byte) *FramingError {
	line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
	parts := strings.Split(string(line), " ")
	if strings.HasPrefix(parts[0], "RTSP/") {
		return nil // a response's status line
	}
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return &FramingError{Code: base.StatusBadRequest, Reason: "malformed request line"}
	}
	for i := 0; i < len(parts[0]); i++ {
		if !isTokenChar(parts[0][i]) {
			return &FramingError{Code: base.StatusBadRequest, Reason: "malformed method"}
		}
	}
	switch {
	case parts[2] == "RTSP/1.0":
		return nil
	case strings.HasPrefix(parts[2], "RTSP/"):
		return &FramingError{Code: base.StatusRTSPVersionNotSupported, Reason: "only RTSP/1.0 is served"}
	}
	return &FramingError{Code: base.StatusBadRequest, Reason: "not an RTSP/1.0 request"}
}

// headEnd returns the length of the head at the start of b, up to and
// including the empty line that ends it (CRLF or LF alone: "\n\r\n" or
// "\n\n"); 0 when b does not hold it yet.
func headEnd(b []byte) int {
	for i := bytes.IndexByte(b, '\n'); i >= 0 && i+1 < len(b); {
		switch {
		case b[i+1] == '\n':
			return i + 2
		case b[i+1] == '\r' && i+2 < len(b) && b[i+2] == '\n':
			return i + 3
		}
		j := bytes.IndexByte(b[i+1:], '\n')
		if j < 0 {
			return 0
		}
		i += 1 + j
	}
	return 0
}

// bareCR reports whether head holds a CR that does not end a line.
func bareCR(head []byte) bool {
	for i, c := range head {
		if c == '\r' && (i+1 == len(head) || head[i+1] != '\n') {
			return true
		}
	}
	return false
}

// withCRLF returns a copy of head (lines ended by LF, CR LF, or both) with
// every line ended by CRLF.
func withCRLF(head []byte) []byte {
	out := make([]byte, 0, len(head)+bytes.Count(head, []byte("\n")))
	for len(head) > 0 {
		i := bytes.IndexByte(head, '\n')
		if i < 0 {
			return append(out, head...) // not reached: a head ends in LF
		}
		out = append(out, bytes.TrimSuffix(head[:i], []byte("\r"))...)
		out = append(out, '\r', '\n')
		head = head[i+1:]
	}
	return out
}

// headerOf returns the value of header name (lower case) in a raw head,
// whatever its line ends.
func headerOf(head []byte, name string) (string, bool) {
	for _, line := range strings.Split(string(head), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(strings.TrimSpace(k), name) {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// headerValues returns the values of every header line name (lower
// case) in a raw head, a line's comma-separated list split, each
// trimmed.
func headerValues(head []byte, name string) []string {
	var vs []string
	for _, line := range strings.Split(string(head), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(strings.TrimSpace(k), name) {
			for _, x := range strings.Split(v, ",") {
				vs = append(vs, strings.TrimSpace(x))
			}
		}
	}
	return vs
}

// cseqOf returns the CSeq of a raw head, "" when there is none.
func cseqOf(head []byte) string {
	v, _ := headerOf(head, "cseq")
	if _, err := strconv.ParseUint(v, 10, 32); err != nil {
		return ""
	}
	return v
}

// isTokenChar reports whether c may appear in an RFC 2616 token (method
// names): visible ASCII except separators.
func isTokenChar(c byte) bool {
	if c <= ' ' || c >= 0x7f {
		return false
	}
	return !strings.ContainsRune(`()<>@,;:\"/[]?={}`, rune(c))
}
