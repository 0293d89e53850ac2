package main

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// serveOnce accepts connections on loopback until the test ends and
// answers each with answer(conn) (then closes it); it returns the address.
func serveOnce(t *testing.T, answer func(c net.Conn)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				answer(c)
			}()
		}
	}()
	return lis.Addr().String()
}

// vodctl play says what is wrong with the URL when its scheme or port is:
// rtsps:// to a plain RTSP server (it said only "tls: first record does
// not look like a TLS handshake"), and rtsp:// to a port that closes
// without an RTSP answer, as the front door's HTTP port does (it said
// only "DESCRIBE: EOF").
func TestPlayHintsSchemeAndPort(t *testing.T) {
	plainRTSP := serveOnce(t, func(c net.Conn) {
		c.Write([]byte("RTSP/1.0 400 Bad Request\r\nCSeq: 1\r\n\r\n"))
	})
	closes := serveOnce(t, func(c net.Conn) {
		bufio.NewReader(c).ReadString('\n') // the request line, then close
	})
	run := func(args ...string) error {
		cmd := newRoot()
		cmd.SetOut(&strings.Builder{})
		cmd.SetErr(&strings.Builder{})
		cmd.SetArgs(append([]string{"play", "--duration", "1s"}, args...))
		return cmd.Execute()
	}
	err := run("rtsps://demo:demo@" + plainRTSP + "/vod/sample-001")
	if err == nil || !strings.Contains(err.Error(), plainRTSP+" answers without TLS: give it an rtsp:// URL") {
		t.Errorf("rtsps:// to plain RTSP: %v", err)
	}
	err = run("rtsp://demo:demo@" + closes + "/vod/sample-001")
	if err == nil || !strings.Contains(err.Error(), closes+" closed the connection without an RTSP answer: is it the front door's RTSP port") {
		t.Errorf("rtsp:// to a port that closes: %v", err)
	}
	// A refusal is the server's answer: no hint.
	if err := run("rtsp://demo:demo@" + plainRTSP + "/vod/sample-001"); err == nil || strings.Contains(err.Error(), "without") {
		t.Errorf("rtsp:// to a server answering 400: %v", err)
	}
}
