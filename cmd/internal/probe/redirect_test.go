package probe

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// fakeRTSP serves RTSP on loopback: OPTIONS answered 200, any other
// request with answer(cseq), up to 8 requests a connection.
func fakeRTSP(t *testing.T, answer func(cseq string) string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				br := bufio.NewReader(c)
				for range 8 {
					method, cseq, ok := readRequest(br)
					if !ok {
						return
					}
					if method == "OPTIONS" {
						c.Write([]byte("RTSP/1.0 200 OK\r\nCSeq: " + cseq + "\r\nPublic: DESCRIBE, SETUP, PLAY, TEARDOWN\r\n\r\n"))
						continue
					}
					c.Write([]byte(answer(cseq)))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// readRequest reads an RTSP request without a body: its method and CSeq.
func readRequest(br *bufio.Reader) (method, cseq string, ok bool) {
	for first := true; ; first = false {
		l, err := br.ReadString('\n')
		if err != nil {
			return "", "", false
		}
		l = strings.TrimRight(l, "\r\n")
		switch {
		case l == "":
			return method, cseq, true
		case first:
			method, _, _ = strings.Cut(l, " ")
		case strings.HasPrefix(strings.ToLower(l), "cseq:"):
			cseq = strings.TrimSpace(l[len("cseq:"):])
		}
	}
}

// A node that refuses the admission token of the front door's redirect
// (it expired on the way, or was already used) is named with its reason:
// it was the bare "401 (Unauthorized)", and with a user name and password
// in the URL "unable to setup authentication: no authentication methods
// available", read as the password refused (the client offers them to
// the node too, which asks for a Bearer token). A front door and a node
// on loopback.
func TestNodeRefusalAfterRedirectExplained(t *testing.T) {
	node := fakeRTSP(t, func(cseq string) string {
		return "RTSP/1.0 401 Unauthorized\r\nCSeq: " + cseq +
			"\r\nWWW-Authenticate: Bearer realm=\"vodcluster\", error=\"invalid_token\", error_description=\"admission token expired\"\r\n\r\n"
	})
	front := fakeRTSP(t, func(cseq string) string {
		return "RTSP/1.0 302 Moved Temporarily\r\nCSeq: " + cseq + "\r\nLocation: rtsp://" + node + "/s/eyJ.grant/vod/t\r\n\r\n"
	})
	for url, want := range map[string]string{
		"rtsp://" + front + "/vod/t":           "401 (Unauthorized): the node " + node + " refused the admission token of the front door's redirect: admission token expired",
		"rtsp://" + front + "/vod/t?token=eyJ": "401 (Unauthorized): the node " + node + " refused the admission token of the front door's redirect: admission token expired",
		"rtsp://demo:pw@" + front + "/vod/t":   ": the node " + node + " answered 401: it refused the admission token of the front door's redirect (not the user name and password",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := Play(ctx, url, Options{})
		cancel()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant %q", res.URL, err, want)
		}
		if err != nil && (strings.Contains(err.Error(), "subscriber token") || strings.Contains(err.Error(), "eyJ")) {
			t.Errorf("%s: %v: the node's refusal taken for the front door's, or a token named", res.URL, err)
		}
	}
}

// A DESCRIBE that fails at the node the front door redirected to, one
// not listening at the address it advertises or one answering 404, is a
// *RedirectedError naming the node: its failure read as the front
// door's ("cannot reach the manager at FRONT: dial tcp NODE: ...").
// The front door's own refusal is none.
func TestNodeFailureAfterRedirectNamesTheNode(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	notFound := fakeRTSP(t, func(cseq string) string {
		return "RTSP/1.0 404 Not Found\r\nCSeq: " + cseq + "\r\n\r\n"
	})
	redirect := func(node string) string {
		return fakeRTSP(t, func(cseq string) string {
			return "RTSP/1.0 302 Moved Temporarily\r\nCSeq: " + cseq + "\r\nLocation: rtsp://" + node + "/s/eyJ.grant/vod/t\r\n\r\n"
		})
	}
	for _, c := range []struct{ front, node string }{
		{redirect(closed), closed},
		{redirect(notFound), notFound},
		{notFound, ""},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := Play(ctx, "rtsp://"+c.front+"/vod/t", Options{})
		cancel()
		var re *RedirectedError
		switch {
		case err == nil:
			t.Errorf("front door %s: played", c.front)
		case c.node == "" && errors.As(err, &re):
			t.Errorf("front door %s's own refusal: %v names node %q", c.front, err, re.Host)
		case c.node != "" && (!errors.As(err, &re) || re.Host != c.node):
			t.Errorf("front door %s, redirect to %s: %v (%T) does not name the node", c.front, c.node, err, err)
		}
	}
}
