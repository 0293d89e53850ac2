package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"vodcluster/cmd/internal/probe"
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

// answerAfterOptions answers as the front door and the node do: OPTIONS
// 200, any other request with status (a code and reason phrase, and any
// header lines after it), each with its CSeq.
func answerAfterOptions(status string) func(c net.Conn) {
	return func(c net.Conn) {
		r := textproto.NewReader(bufio.NewReader(c))
		for {
			line, err := r.ReadLine()
			if err != nil {
				return
			}
			h, err := r.ReadMIMEHeader()
			if err != nil {
				return
			}
			if strings.HasPrefix(line, "OPTIONS ") {
				fmt.Fprintf(c, "RTSP/1.0 200 OK\r\nCSeq: %s\r\nPublic: DESCRIBE, SETUP, PLAY, TEARDOWN\r\n\r\n", h.Get("Cseq"))
				continue
			}
			fmt.Fprintf(c, "RTSP/1.0 %s\r\nCSeq: %s\r\n\r\n", status, h.Get("Cseq"))
		}
	}
}

// answerRedirect answers as the front door does: DESCRIBE 302 to node
// (host:port) with an admission token's path.
func answerRedirect(node string) func(c net.Conn) {
	return answerAfterOptions("302 Moved Temporarily\r\nLocation: rtsp://" + node + "/s/eyJ.grant/vod/sample-001")
}

// A play's error is one plain line: a refusal says who refused which
// request, with the RTSP status code and reason, and a 404 names the
// title; a port nothing listens on is "cannot reach the manager". They
// began with the probe's and the RTSP library's words ("probe: DESCRIBE:
// bad status code: 404 (Not Found (no such title))", "probe: DESCRIBE:
// dial tcp ..."). A failure at the node the front door redirected to is
// the node's: it was the manager's ("cannot reach the manager at FRONT:
// dial tcp NODE: ...", "the manager at FRONT has no title").
func TestPlayErrorIsOnePlainLine(t *testing.T) {
	notFound := serveOnce(t, answerDescribe("404 Not Found (no such title)"))
	forbidden := serveOnce(t, answerDescribe("403 Forbidden (not entitled)"))
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	goneAddr := gone.Addr().String()
	gone.Close()
	toGone := serveOnce(t, answerRedirect(goneAddr))
	toNotFound := serveOnce(t, answerRedirect(notFound))
	// A node refusing the redirect's admission token (the status line,
	// then its challenge).
	toUnauthorizedNode := serveOnce(t, answerAfterOptions("401 Unauthorized\r\n"+
		`WWW-Authenticate: Bearer realm="vodcluster", error="invalid_token", error_description="admission token expired"`))
	toUnauthorized := serveOnce(t, answerRedirect(toUnauthorizedNode))
	for _, c := range []struct{ url, want string }{
		{"rtsp://demo:demo@" + notFound + "/vod/nosuch", `vodctl: the manager at ` + notFound + ` has no title "nosuch": RTSP 404 Not Found (no such title)` + "\n"},
		{"rtsp://demo:demo@" + forbidden + "/vod/sample-001", `vodctl: the manager at ` + forbidden + ` refused DESCRIBE: RTSP 403 Forbidden (not entitled)` + "\n"},
		{"rtsp://" + goneAddr + "/vod/sample-001", "vodctl: cannot reach the manager at " + goneAddr + ": dial tcp " + goneAddr + ": connect: connection refused (is the manager running with its front door's RTSP at " + goneAddr + "? rtsp_listen, 8554 by default)\n"},
		{"rtsp://demo:demo@" + toGone + "/vod/sample-001", "vodctl: cannot reach the node at " + goneAddr + " (the front door's redirect): dial tcp " + goneAddr + ": connect: connection refused (the front door redirects players to the address the node advertises, its advertise_host and rtsp_listen's port, rtsps_listen's over RTSPS: is the node running, and is that address reachable from players?)\n"},
		{"rtsp://demo:demo@" + toNotFound + "/vod/sample-001", `vodctl: the node at ` + notFound + ` (the front door's redirect) has no title "sample-001": RTSP 404 Not Found (no such title)` + "\n"},
		{"rtsp://" + toUnauthorized + "/vod/sample-001", `vodctl: the node at ` + toUnauthorizedNode + ` (the front door's redirect) refused DESCRIBE: RTSP 401 Unauthorized: it refused the admission token of the front door's redirect: admission token expired` + "\n"},
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

// A play whose context ends before the server answered PLAY, with no
// signal (its --duration + 30 s), is one line with no inner "probe:": it
// said "stopped before PLAY's answer (...): probe: DESCRIBE: ...", the
// probe's words left inside the request's error. A server that does not
// answer DESCRIBE.
func TestPlayStoppedBeforeAnswerIsOnePlainLine(t *testing.T) {
	addr, asked := serveSilent(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	cmd := newRoot()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"play", "--duration", "60s", "rtsp://demo:demo@" + addr + "/vod/sample-001"})
	ran := make(chan error, 1)
	go func() { ran <- cmd.ExecuteContext(ctx) }()
	select {
	case <-asked:
	case err := <-ran:
		t.Fatalf("play ended before its first request: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no request within 10 s")
	}
	cancel(errors.New("the play's time is up"))
	select {
	case err := <-ran:
		if want := "stopped before PLAY's answer (the play's time is up): DESCRIBE: "; err == nil || !strings.HasPrefix(err.Error(), want) ||
			strings.Contains(err.Error(), "probe:") || strings.Contains(err.Error(), "\n") || !errors.Is(err, probe.ErrStopped) {
			t.Fatalf("play stopped before PLAY: %v; want one line beginning %q, without \"probe:\"", err, want)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("play still running 15 s after its context ended")
	}
}
