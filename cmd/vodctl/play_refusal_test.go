package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/textproto"
	"strings"
	"testing"
)

// answerDescribe answers an RTSP client's requests with status (a code
// and reason phrase), each with its CSeq.
func answerDescribe(status string) func(c net.Conn) {
	return func(c net.Conn) {
		r := textproto.NewReader(bufio.NewReader(c))
		for {
			if _, err := r.ReadLine(); err != nil {
				return
			}
			h, err := r.ReadMIMEHeader()
			if err != nil {
				return
			}
			fmt.Fprintf(c, "RTSP/1.0 %s\r\nCSeq: %s\r\n\r\n", status, h.Get("Cseq"))
		}
	}
}

// A play's error is one plain line: a refusal says who refused which
// request, with the RTSP status code and reason, and a 404 names the
// title; a port nothing listens on is "cannot reach the manager". They
// began with the probe's and the RTSP library's words ("probe: DESCRIBE:
// bad status code: 404 (Not Found (no such title))", "probe: DESCRIBE:
// dial tcp ...").
func TestPlayErrorIsOnePlainLine(t *testing.T) {
	notFound := serveOnce(t, answerDescribe("404 Not Found (no such title)"))
	forbidden := serveOnce(t, answerDescribe("403 Forbidden (not entitled)"))
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	goneAddr := gone.Addr().String()
	gone.Close()
	for _, c := range []struct{ url, want string }{
		{"rtsp://demo:demo@" + notFound + "/vod/nosuch", `vodctl: the manager at ` + notFound + ` has no title "nosuch": RTSP 404 Not Found (no such title)` + "\n"},
		{"rtsp://demo:demo@" + forbidden + "/vod/sample-001", `vodctl: the manager at ` + forbidden + ` refused DESCRIBE: RTSP 403 Forbidden (not entitled)` + "\n"},
		{"rtsp://" + goneAddr + "/vod/sample-001", "vodctl: cannot reach the manager at " + goneAddr + ": dial tcp " + goneAddr + ": connect: connection refused (is the manager running with its front door's RTSP at " + goneAddr + "? rtsp_listen, 8554 by default)\n"},
	} {
		var stdout, stderr bytes.Buffer
		code := run([]string{"play", "--duration", "1s", c.url}, &stdout, &stderr)
		if code != 1 || stderr.String() != c.want {
			t.Errorf("play %s: exit status %d, %q; want 1 and %q", c.url, code, stderr.String(), c.want)
		}
		for _, lib := range []string{"probe:", "bad status code"} {
			if strings.Contains(stderr.String(), lib) {
				t.Errorf("play %s: %q in %q", c.url, lib, stderr.String())
			}
		}
	}
}
