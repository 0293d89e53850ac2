package probe

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// Bad options are refused before any connection (port 1 on loopback would
// refuse it anyway, with another error).
func TestPlayRefusesBadOptions(t *testing.T) {
	for _, o := range []Options{{Duration: -time.Second}, {Transport: "sctp"}} {
		_, err := Play(context.Background(), "rtsp://127.0.0.1:1/vod/x", o)
		if err == nil || strings.Contains(err.Error(), "dial") {
			t.Fatalf("%+v: %v", o, err)
		}
	}
	if _, err := PlayContext("rtsp://127.0.0.1:1/vod/x", Options{Duration: -time.Second}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("PlayContext with a negative duration: %v", err)
	}
}

// A URL that is not RTSP is refused saying what the client plays: an
// HTTP URL was "unsupported scheme 'http'", and a word with no scheme
// "unsupported scheme" with an empty name.
func TestPlayRefusesURLsNotRTSP(t *testing.T) {
	for url, want := range map[string]string{
		"http://demo:demo@127.0.0.1:1/vod/x.ts": "a http:// URL: this client plays RTSP",
		"HTTPS://127.0.0.1:1/vod/x/index.m3u8":  "a HTTPS:// URL: this client plays RTSP",
		"sample-001":                            `"sample-001" is not a URL: want rtsp://`,
		"":                                      `"" is not a URL`,
	} {
		if _, err := Play(context.Background(), url, Options{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", url, err, want)
		}
	}
	if _, err := Play(context.Background(), "RTSP://127.0.0.1:1/vod/x", Options{}); err == nil || !strings.Contains(err.Error(), "dial") {
		t.Errorf("an RTSP URL in capitals is not dialled: %v", err)
	}
}

// The result names the URL without its password (a result pasted into a
// ticket carried the subscriber's password), whatever the outcome.
func TestResultURLHidesThePassword(t *testing.T) {
	res, err := Play(context.Background(), "rtsp://demo:s3cret@127.0.0.1:1/vod/sample-001", Options{Duration: -1})
	if err == nil {
		t.Fatal("a negative duration was accepted")
	}
	if res.URL != "rtsp://demo:xxxxx@127.0.0.1:1/vod/sample-001" || strings.Contains(res.String(), "s3cret") {
		t.Errorf("result %q names the password", res)
	}
	if got := redacted("rtsp://127.0.0.1:1/vod/x"); got != "rtsp://127.0.0.1:1/vod/x" {
		t.Errorf("a URL without credentials: %q", got)
	}
	// A URL that does not parse: its error quoted it whole, password too.
	for raw, want := range map[string]string{
		"rtsp://demo:s3cret@host name/vod/x": `probe: parse "rtsp://demo:xxxxx@host name/vod/x": invalid character " " in host name`,
		"rtsp://demo:s3:c@ret@[::1/vod/x":    `probe: parse "rtsp://demo:xxxxx@[::1/vod/x": missing ']' in host`,
	} {
		res, err := Play(context.Background(), raw, Options{})
		if err == nil || err.Error() != want || strings.Contains(res.String(), "s3") {
			t.Errorf("%s: %v, result %q; want %s", raw, err, res.URL, want)
		}
	}
	for _, raw := range []string{"rtsp://host name/x", "rtsp://demo@host name/x", "rtsp://host name/a:b@c"} {
		if got := hidePassword(raw); got != raw {
			t.Errorf("hidePassword(%q) = %q: no password to hide", raw, got)
		}
	}
}

// ctx ending before the server answered stops Play at once with
// ErrStopped, naming why: it went on waiting for the answer up to the
// client's 10 s read timeout. A server that never answers DESCRIBE.
func TestPlayStoppedBeforeAnswer(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	asked := make(chan struct{})
	go func() {
		c, err := lis.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(15 * time.Second))
		bufio.NewReader(c).ReadString('\n')
		close(asked)
		io.Copy(io.Discard, c) // no answer, until the client closes
	}()
	ctx, cancel := context.WithCancelCause(context.Background())
	type result struct {
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		_, err := Play(ctx, "rtsp://"+lis.Addr().String()+"/vod/x", Options{Duration: time.Minute})
		done <- result{err, time.Now()}
	}()
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("no DESCRIBE within 10 s")
	}
	stopped := time.Now()
	cancel(errors.New("the operator's Ctrl-C"))
	select {
	case r := <-done:
		if !errors.Is(r.err, ErrStopped) || !strings.Contains(r.err.Error(), "stopped before PLAY's answer (the operator's Ctrl-C)") ||
			r.at.Sub(stopped) > 3*time.Second {
			t.Fatalf("Play stopped during DESCRIBE: %v, %v later", r.err, r.at.Sub(stopped))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Play still waiting 15 s after its context ended")
	}
}

// The result names the URL without its subscriber token (?token=, a
// bearer credential), as without its password, the other parameters as
// they are, in a URL that does not parse too.
func TestResultURLHidesTheToken(t *testing.T) {
	for raw, want := range map[string]string{
		"rtsp://h:8554/vod/t?token=eyJ.a.b":                "rtsp://h:8554/vod/t?token=xxxxx",
		"rtsp://u:p@h:8554/vod/t/es?a=1&token=eyJ.a.b&b=2": "rtsp://u:xxxxx@h:8554/vod/t/es?a=1&token=xxxxx&b=2",
		"rtsp://h/vod/t?%74oken=eyJ.a.b":                   "rtsp://h/vod/t?%74oken=xxxxx",
		"rtsp://h/vod/t?tokens=1&xtoken=2":                 "rtsp://h/vod/t?tokens=1&xtoken=2",
		"rtsp://u:p@host name/vod/t?token=eyJ.a.b#f":       "rtsp://u:xxxxx@host name/vod/t?token=xxxxx#f",
		"rtsp://h/vod/t":                                   "rtsp://h/vod/t",
	} {
		if got := redacted(raw); got != want {
			t.Errorf("redacted(%q) = %q, want %q", raw, got, want)
		}
	}
}
