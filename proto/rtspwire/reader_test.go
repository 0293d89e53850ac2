package rtspwire

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// TestReader: requests with and without a body, frames and responses
// are told apart, empty lines before them skipped (a stray CRLF was 400
// "not an RTSP request", the connection closed), up to 1 kB of them; what
// is not a well-formed RTSP/1.0 request is a
// *FramingError with the right code and the CSeq when there is one (two
// Content-Lengths that differ too: read as the first, the rest of the
// body was taken for a request of its own).
func TestReader(t *testing.T) {
	r := NewReader(strings.NewReader("\r\nOPTIONS * RTSP/1.0\r\nCSeq: 1\r\n\r\n\r\n" +
		"$\x01\x00\x02hi\n" +
		"RTSP/1.0 200 OK\r\nCSeq: 9\r\n\r\n" +
		"SET_PARAMETER rtsp://h/x RTSP/1.0\r\nCSeq: 2\r\nContent-Length: 4\r\n\r\nabcd" +
		"SET_PARAMETER rtsp://h/x RTSP/1.0\r\nCSeq: 3\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nefgh"))
	for i, want := range []string{"OPTIONS", "frame 1", "response", "SET_PARAMETER abcd", "SET_PARAMETER efgh"} {
		msg, err := r.Next()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		got := ""
		switch m := msg.(type) {
		case *base.Request:
			got = strings.TrimSpace(string(m.Method) + " " + string(m.Body))
		case Frame:
			got = "frame " + string(rune('0'+m.Channel))
		case Response:
			got = "response"
		}
		if got != want {
			t.Fatalf("message %d: %q, want %q", i, got, want)
		}
	}
	for _, tc := range []struct {
		raw  string
		code base.StatusCode
		cseq string
	}{
		{"GARBAGE\r\n\r\n", base.StatusBadRequest, ""},
		{"GARBAGE\n\n", base.StatusBadRequest, ""},
		{strings.Repeat("\r\n", 600) + "OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n\r\n", base.StatusBadRequest, ""},
		{"\x00\x01 garbage", base.StatusBadRequest, ""},
		{"OPTIONS * RTSP/1.0\r\nCSeq: 3\rX-Injected: 1\r\n\r\n", base.StatusBadRequest, ""},
		{"OPTIONS * RTSP/1.0\r\nCSeq: 4\r\nX: a\r\r\n\r\n", base.StatusBadRequest, "4"},
		{"OPTIONS * RTSP/2.0\r\nCSeq: 5\r\n\r\n", base.StatusRTSPVersionNotSupported, "5"},
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", base.StatusBadRequest, ""},
		{"OPTIONS * RTSP/1.0\r\nCSeq: 6\r\nContent-Length: 999999999\r\n\r\n", base.StatusBadRequest, "6"},
		// two lengths: the rest of the body was read as a request of its own
		{"OPTIONS * RTSP/1.0\r\nCSeq: 7\r\nContent-Length: 1\r\nContent-Length: 40\r\n\r\nXSET_PARAMETER * RTSP/1.0\r\nCSeq: 8\r\n\r\n", base.StatusBadRequest, "7"},
		{"OPTIONS * RTSP/1.0\r\nCSeq: 9\r\nContent-Length: 1, 40\r\n\r\nXSET_PARAMETER * RTSP/1.0\r\nCSeq: 10\r\n\r\n", base.StatusBadRequest, "9"},
	} {
		_, err := NewReader(strings.NewReader(tc.raw)).Next()
		var fe *FramingError
		if !errors.As(err, &fe) || fe.Code != tc.code || fe.CSeq != tc.cseq {
			t.Errorf("%q: %v, want %d with CSeq %q", tc.raw, err, tc.code, tc.cseq)
		}
	}
}

// FuzzRTSPReader: whatever a client sends, the reader returns requests,
// frames or an error, never panics, and always makes progress.
func FuzzRTSPReader(f *testing.F) {
	for _, s := range []string{
		"OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n\r\n",
		"SET_PARAMETER rtsp://h/x RTSP/1.0\r\nCSeq: 2\r\nContent-Length: 4\r\n\r\nabcd$\x01\x00\x02hi",
		"RTSP/1.0 200 OK\r\nCSeq: 3\r\n\r\nFOO * RTSP/1.0\r\nCSeq: 4\r\n\r\n",
		"OPTIONS * RTSP/1.0\nCSeq: 1\n\n",
		"\x00\xff garbage",
		"GET / HTTP/1.1\r\n\r\n",
		"DESCRIBE rtsp://h/vod/x RTSP/1.0\r\nCSeq: 1\r\nContent-Length: 99999999\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(bytes.NewReader(b))
		for i := 0; i <= len(b); i++ {
			msg, err := r.Next()
			if err != nil {
				return
			}
			switch m := msg.(type) {
			case *base.Request:
				if m.Method == "" {
					t.Fatal("request without method")
				}
			case Frame, Response:
			default:
				t.Fatalf("message %T", msg)
			}
		}
		t.Fatal("more messages than bytes")
	})
}

// TestReaderWait: Wait returns once a message's first byte is in, without
// consuming it (Next reads the whole message), empty lines before it
// dropped, and the read error at the end (after a last CRLF too).
func TestReaderWait(t *testing.T) {
	r := NewReader(strings.NewReader("\r\n\r\nOPTIONS * RTSP/1.0\r\nCSeq: 1\r\n\r\n\r\n"))
	for range 2 {
		if err := r.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	msg, err := r.Next()
	if req, ok := msg.(*base.Request); err != nil || !ok || req.Method != base.Options {
		t.Fatalf("after Wait: %v %v", msg, err)
	}
	if err := r.Wait(); err == nil {
		t.Fatal("Wait at the end: no error")
	}
}

// TestReaderBareLF: lines ended by LF alone, or some by CRLF and some by
// LF, are read as with CRLF (RFC 2326 §4: a receiver should take LF by
// itself as a line end; they were 400 "not ended by CRLF"), the body after
// the head as its Content-Length says, and the next request after it.
func TestReaderBareLF(t *testing.T) {
	r := NewReader(strings.NewReader("OPTIONS * RTSP/1.0\nCSeq: 3\n\n" +
		"SET_PARAMETER rtsp://h/x RTSP/1.0\nCSeq: 4\r\nContent-Length: 3\n\r\na\nb" +
		"DESCRIBE rtsp://h/vod/x RTSP/1.0\r\nCSeq: 5\nAccept: application/sdp\n\n"))
	for _, want := range []struct {
		method, cseq, body string
	}{{"OPTIONS", "3", ""}, {"SET_PARAMETER", "4", "a\nb"}, {"DESCRIBE", "5", ""}} {
		msg, err := r.Next()
		if err != nil {
			t.Fatalf("%s: %v", want.method, err)
		}
		req, ok := msg.(*base.Request)
		if !ok || string(req.Method) != want.method || len(req.Header["CSeq"]) != 1 || req.Header["CSeq"][0] != want.cseq || string(req.Body) != want.body {
			t.Fatalf("%#v, want %s with CSeq %s and body %q", msg, want.method, want.cseq, want.body)
		}
	}
	if _, err := r.Next(); err == nil {
		t.Fatal("a message after the last")
	}
}

// TestReaderLimits: a request URL or header value at gortsplib's limits
// is read; one byte over is a 400 whose reason names what is too long
// (gortsplib's own error, "buffer length exceeds 2048", named nothing),
// with the request's CSeq.
func TestReaderLimits(t *testing.T) {
	uri := func(n int) string {
		return "rtsp://h/vod/x?token=" + strings.Repeat("a", n-len("rtsp://h/vod/x?token="))
	}
	for _, tc := range []struct {
		name, raw, reason string
	}{
		{"URL at the limit", "DESCRIBE " + uri(MaxURI) + " RTSP/1.0\r\nCSeq: 1\r\n\r\n", ""},
		{"URL over", "DESCRIBE " + uri(MaxURI+1) + " RTSP/1.0\r\nCSeq: 1\r\n\r\n", "request URL of 2048 bytes, longer than 2047"},
		{"value at the limit", "DESCRIBE rtsp://h/vod/x RTSP/1.0\r\nCSeq: 1\r\nAuthorization:  Bearer " + strings.Repeat("b", MaxHeaderValue-7) + "\r\n\r\n", ""},
		{"value over", "DESCRIBE rtsp://h/vod/x RTSP/1.0\r\nCSeq: 1\r\nAuthorization: Bearer " + strings.Repeat("b", MaxHeaderValue-6) + "\r\n\r\n", "header Authorization of 2048 bytes, longer than 2047"},
		{"name over", "DESCRIBE rtsp://h/vod/x RTSP/1.0\r\nCSeq: 1\r\n" + strings.Repeat("N", MaxHeaderName+1) + ": v\r\n\r\n", "header name of 512 bytes, longer than 511"},
		// another error of the parser is its own, whatever else is long
		{"method over, a long header", strings.Repeat("M", 70) + " rtsp://h/vod/x RTSP/1.0\r\nCSeq: 1\r\nX-Long: " + strings.Repeat("b", 2100) + "\r\n\r\n", "buffer length exceeds 64"},
	} {
		msg, err := NewReader(strings.NewReader(tc.raw)).Next()
		if tc.reason == "" {
			if _, ok := msg.(*base.Request); !ok || err != nil {
				t.Errorf("%s: %v, want the request", tc.name, err)
			}
			continue
		}
		var fe *FramingError
		if !errors.As(err, &fe) || fe.Code != base.StatusBadRequest || fe.Reason != tc.reason || fe.CSeq != "1" {
			t.Errorf("%s: %v, want 400 %q with CSeq 1", tc.name, err, tc.reason)
		}
	}
}

// deadlineAfter reads s, then fails as a connection whose read deadline
// passed.
func deadlineAfter(s string) *Reader {
	return NewReader(io.MultiReader(strings.NewReader(s), iotest.ErrReader(os.ErrDeadlineExceeded)))
}

// TestReaderDeadline: a read deadline that passes inside a request (its
// head or its body) is a 408 with the CSeq of the header lines already
// whole (it was the read error, and a server gave such a request its idle
// timeout); before a message's first byte, or inside an interleaved frame,
// it stays the read error.
func TestReaderDeadline(t *testing.T) {
	for _, tc := range []struct {
		name, raw, cseq string
	}{
		{"request line", "OPTIONS rtsp://h/vod/x RTS", ""},
		{"head", "OPTIONS rtsp://h/vod/x RTSP/1.0\r\nCSeq: 1\r\n", "1"},
		{"in the CSeq line", "OPTIONS rtsp://h/vod/x RTSP/1.0\r\nCSeq: 1", ""},
		{"body", "SET_PARAMETER rtsp://h/x RTSP/1.0\r\nCSeq: 2\r\nContent-Length: 4\r\n\r\nab", "2"},
		{"a response's", "RTSP/1.0 200 OK\r\nCSeq: 3\r\n", "3"},
		{"after a request", "OPTIONS * RTSP/1.0\r\nCSeq: 4\r\n\r\nOPTIONS * RTSP/1.0\r\n", ""},
	} {
		r := deadlineAfter(tc.raw)
		msg, err := r.Next()
		if tc.name == "after a request" {
			if _, ok := msg.(*base.Request); !ok || err != nil {
				t.Fatalf("%s: %v %v, want the first request", tc.name, msg, err)
			}
			_, err = r.Next()
		}
		var fe *FramingError
		if !errors.As(err, &fe) || fe.Code != base.StatusRequestTimeout || fe.CSeq != tc.cseq {
			t.Errorf("%s: %v, want 408 with CSeq %q", tc.name, err, tc.cseq)
		}
	}
	for _, tc := range []struct{ name, raw string }{
		{"nothing", ""},
		{"blank lines", "\r\n\r\n"},
		{"frame header", "$\x01\x00"},
		{"frame payload", "$\x01\x00\x08abc"},
	} {
		if _, err := deadlineAfter(tc.raw).Next(); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s: %v, want the read error", tc.name, err)
		}
	}
	if err := deadlineAfter("\r\n").Wait(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Wait: %v, want the read error", err)
	}
}
