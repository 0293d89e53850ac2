package connlimit

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"
)

// A connection over the limit is answered, not closed bare, on a plain
// RTSP or HTTP listener: a player that reads EOF with no status (ffmpeg,
// a set-top box, curl) cannot tell "too many connections from your
// address" from a crash. The answer reads the client's first request,
// bounded in time and bytes, to answer in its protocol (and with its
// CSeq, RTSP), then closes. At most MaxAnswering connections are answered at
// once, over all the listeners, and at most MaxAnsweringPerKey of one client
// key, so that one address flooding silent connections cannot take every
// answer for AnswerTimeout each and leave another address's refusal
// unanswered; beyond them a refused connection is closed at once, as a
// TLS listener's always is (answering would cost a handshake). Accept
// never waits for an answer.

// MaxAnswering is how many refused connections may be answered at once.
const MaxAnswering = 64

// MaxAnsweringPerKey is how many refused connections of one client key may
// be answered at once (a player reconnecting after a refusal has one or
// two in flight).
const MaxAnsweringPerKey = 4

// readBytes bounds the bytes read of a refused connection's first
// request (its request line and headers).
const readBytes = 4 << 10

// RetryAfter is the Retry-After of a refusal, in seconds: a slot frees
// when one of the address's connections closes, not at a known time.
const RetryAfter = 5

// Message is the reason given to a refused connection (the RTSP reason
// phrase's parenthesis, the start of the body's text).
const Message = "too many connections open from your address"

// Answer is how a listener answers a refused connection.
type Answer int

// The answers.
const (
	Close Answer = iota // closed at once, nothing written (a listener TLS wraps)
	RTSP                // RTSP/1.0 503 with the request's CSeq (an HTTP request answered in HTTP)
	HTTP                // HTTP/1.1 503 with Connection: close
)

// startAnswer takes one of the MaxAnswering slots for c, of client key k;
// false when all are taken, k has MaxAnsweringPerKey answers in flight
// already or the limiter is closed (CloseAnswers). Never blocks.
func (l *Limiter) startAnswer(c net.Conn, k netip.Prefix) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.answersClosed || l.answersBy[k] >= MaxAnsweringPerKey {
		return false
	}
	select {
	case l.answering <- struct{}{}:
	default:
		return false
	}
	l.answers[c] = k
	l.answersBy[k]++
	l.answersWG.Add(1)
	return true
}

// endAnswer frees the slots startAnswer took for c.
func (l *Limiter) endAnswer(c net.Conn) {
	l.mu.Lock()
	k := l.answers[c]
	delete(l.answers, c)
	if l.answersBy[k]--; l.answersBy[k] <= 0 {
		delete(l.answersBy, k)
	}
	<-l.answering
	l.mu.Unlock()
	l.answersWG.Done()
}

// CloseAnswers closes the refused connections being answered and waits
// for their goroutines to end; a connection refused after it is closed
// at once. A server calls it once its listeners are closed, so that no
// answer outlives the server (each could otherwise hold its connection
// up to AnswerTimeout + Linger past the server's end). Nil: nothing.
func (l *Limiter) CloseAnswers() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.answersClosed = true
	for c := range l.answers {
		c.Close()
	}
	l.mu.Unlock()
	l.answersWG.Wait()
}

// Answering is how many refused connections are being answered now; 0
// on a nil limiter.
func (l *Limiter) Answering() int {
	if l == nil {
		return 0
	}
	return len(l.answering)
}

// answerRefused answers c, refused at accept, in answer, then closes it;
// it returns within AnswerTimeout + Linger plus one write.
func (l *Limiter) answerRefused(c net.Conn, answer Answer) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(l.c.AnswerTimeout))
	head := readHead(c)
	c.SetWriteDeadline(time.Now().Add(l.c.AnswerTimeout))
	line, _, _ := strings.Cut(string(head), "\n")
	method, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	// An RTSP listener may be sent HTTP (a browser, RTSP over HTTP
	// tunnelling): it is answered in the request's protocol.
	if answer == RTSP && !strings.HasPrefix(rest[strings.LastIndexByte(rest, ' ')+1:], "HTTP/") {
		c.Write(rtspRefusal(cseqOf(head), l.body()))
	} else {
		c.Write(httpRefusal(method == "HEAD", l.body()))
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(l.c.Linger))
	io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}

// readHead reads c until the end of a request's headers (an empty line),
// readBytes, the read deadline, EOF or an error; it returns what
// was read.
func readHead(c net.Conn) []byte {
	buf := make([]byte, 0, readBytes)
	for len(buf) < cap(buf) {
		n, err := c.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if bytes.Contains(buf, []byte("\r\n\r\n")) || bytes.Contains(buf, []byte("\n\n")) || err != nil {
			break
		}
	}
	return buf
}

// cseqOf returns the CSeq of an RTSP request's head (the first one, if
// digits, at most 10), "" if it has none.
func cseqOf(head []byte) string {
	lines := strings.Split(string(head), "\n")
	for _, l := range lines[1:] {
		l = strings.TrimRight(l, "\r")
		if l == "" {
			break
		}
		name, v, ok := strings.Cut(l, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "CSeq") {
			continue
		}
		v = strings.TrimSpace(v)
		if v == "" || len(v) > 10 || strings.Trim(v, "0123456789") != "" {
			return ""
		}
		return v
	}
	return ""
}

// rtspRefusal is the RTSP answer to a refused connection (RFC 2326
// 11.3.x: 503 with Retry-After), its reason in the reason phrase as the
// front door's other refusals give it (players print that line).
func rtspRefusal(cseq, body string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "RTSP/1.0 503 Service Unavailable (%s)\r\n", Message)
	if cseq != "" {
		fmt.Fprintf(&b, "CSeq: %s\r\n", cseq)
	}
	fmt.Fprintf(&b, "Retry-After: %d\r\n", RetryAfter)
	fmt.Fprintf(&b, "Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	return []byte(b.String())
}

// httpRefusal is the HTTP answer to a refused connection; a HEAD request
// gets its headers alone.
func httpRefusal(head bool, body string) []byte {
	s := fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"+
		"Content-Length: %d\r\nRetry-After: %d\r\nConnection: close\r\n\r\n", len(body), RetryAfter)
	if !head {
		s += body
	}
	return []byte(s)
}

// body is the text of a refusal.
func (l *Limiter) body() string {
	return fmt.Sprintf("%s (%d, %s): close one and try again\n", Message, l.c.Max, l.c.Setting)
}
