package acm

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"
)

// A connection over max_conns_per_addr is answered, not closed bare, on
// the plain RTSP and HTTP listeners: a player that reads EOF with no
// status (ffmpeg, a set-top box, curl) cannot tell "too many connections
// from your address" from a crash. The answer reads the client's first
// request, bounded in time and bytes, to answer in its protocol (and with
// its CSeq, RTSP), then closes. At most refuseAnswering connections are
// answered at once, over all the listeners, and at most
// refuseAnsweringPerAddr of one client address (the limit's key: an IPv6
// client's /64), so that one address flooding silent connections cannot
// take every answer for refuseReadTimeout each and leave another
// address's refusal unanswered; beyond them a refused connection is
// closed at once, as a TLS listener's always is (answering would cost a
// handshake). Accept never waits for an answer.

// refuseAnswering is how many refused connections may be answered at once.
const refuseAnswering = 64

// refuseAnsweringPerAddr is how many refused connections of one client
// address may be answered at once (a player reconnecting after a refusal
// has one or two in flight).
const refuseAnsweringPerAddr = 4

// refuseReadBytes bounds the bytes read of a refused connection's first
// request (its request line and headers).
const refuseReadBytes = 4 << 10

// refuseRetryAfter is the Retry-After of a refusal, in seconds: a slot
// frees when one of the address's connections closes, not at a known time.
const refuseRetryAfter = 5

// refuseReadTimeout bounds the wait for a refused connection's first
// request; refuseLinger bounds the read of what the client sends after
// the answer (read so that the close does not reset the connection and
// lose the answer). Variables for tests.
var (
	refuseReadTimeout = 2 * time.Second
	refuseLinger      = time.Second
)

// refuseMessage is the reason given to a refused connection.
const refuseMessage = "too many connections open from your address"

// refuseProto is how a listener answers a refused connection.
type refuseProto int

const (
	refuseClose refuseProto = iota // closed at once (a TLS listener)
	refuseRTSP                     // RTSP/1.0 503 with the request's CSeq
	refuseHTTP                     // HTTP/1.1 503 with Connection: close
)

// startAnswer takes one of the refuseAnswering slots for c, of client
// key k; false when all are taken, k has refuseAnsweringPerAddr answers
// in flight already or the limiter is closed (closeAnswers). Never
// blocks.
func (l *connLimiter) startAnswer(c net.Conn, k netip.Prefix) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.answersClosed || l.answersBy[k] >= refuseAnsweringPerAddr {
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
func (l *connLimiter) endAnswer(c net.Conn) {
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

// closeAnswers closes the refused connections being answered and waits
// for their goroutines to end; a connection refused after it is closed
// at once. The manager's Close calls it once its listeners are closed,
// so that no answer outlives the manager (each could otherwise hold its
// connection up to refuseReadTimeout + refuseLinger past the Close).
func (l *connLimiter) closeAnswers() {
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

// answerRefused answers c, refused at accept, in proto, then closes it;
// it returns within refuseReadTimeout + refuseLinger plus one write.
func answerRefused(c net.Conn, proto refuseProto, max int) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(refuseReadTimeout))
	head := readHead(c)
	c.SetWriteDeadline(time.Now().Add(refuseReadTimeout))
	line, _, _ := strings.Cut(string(head), "\n")
	method, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	// An RTSP listener may be sent HTTP (a browser, RTSP over HTTP
	// tunnelling): it is answered in the request's protocol.
	if proto == refuseRTSP && !strings.HasPrefix(rest[strings.LastIndexByte(rest, ' ')+1:], "HTTP/") {
		c.Write(rtspRefusal(cseqOf(head), max))
	} else {
		c.Write(httpRefusal(method == "HEAD", max))
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(refuseLinger))
	io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}

// readHead reads c until the end of a request's headers (an empty line),
// refuseReadBytes, the read deadline, EOF or an error; it returns what
// was read.
func readHead(c net.Conn) []byte {
	buf := make([]byte, 0, refuseReadBytes)
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
func rtspRefusal(cseq string, max int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "RTSP/1.0 503 Service Unavailable (%s)\r\n", refuseMessage)
	if cseq != "" {
		fmt.Fprintf(&b, "CSeq: %s\r\n", cseq)
	}
	fmt.Fprintf(&b, "Retry-After: %d\r\n", refuseRetryAfter)
	body := refuseBody(max)
	fmt.Fprintf(&b, "Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	return []byte(b.String())
}

// httpRefusal is the HTTP answer to a refused connection; a HEAD request
// gets its headers alone.
func httpRefusal(head bool, max int) []byte {
	body := refuseBody(max)
	s := fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"+
		"Content-Length: %d\r\nRetry-After: %d\r\nConnection: close\r\n\r\n", len(body), refuseRetryAfter)
	if !head {
		s += body
	}
	return []byte(s)
}

// refuseBody is the text of a refusal.
func refuseBody(max int) string {
	return fmt.Sprintf("%s (%d, max_conns_per_addr): close one and try again\n", refuseMessage, max)
}
