package probe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
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
		"http://demo:demo@127.0.0.1:1/vod/x.ts": "this client plays RTSP (rtsp:// or rtsps://), not http://",
		"HTTPS://127.0.0.1:1/vod/x/index.m3u8":  "this client plays RTSP (rtsp:// or rtsps://), not HTTPS://",
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
		// The request's error after the reason, without its own
		// "probe: " (vodctl strips the first only).
		if !errors.Is(r.err, ErrStopped) || !strings.HasPrefix(r.err.Error(), "probe: stopped before PLAY's answer (the operator's Ctrl-C): DESCRIBE: ") ||
			strings.Count(r.err.Error(), "probe:") != 1 ||
			r.at.Sub(stopped) > 3*time.Second {
			t.Fatalf("Play stopped during DESCRIBE: %v, %v later", r.err, r.at.Sub(stopped))
		}
		// The request and the cause, for a caller to word its own line.
		var se *StoppedError
		if !errors.As(r.err, &se) || se.Step != "DESCRIBE" || se.Cause == nil || se.Cause.Error() != "the operator's Ctrl-C" {
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
		"rtsp://u:p@h:8555/s/eyJ.a.b/vod/t/es":             "rtsp://u:xxxxx@h:8555/s/xxxxx/vod/t/es",
		"rtsps://h/s/eyJ.a.b?token=c":                      "rtsps://h/s/xxxxx?token=xxxxx",
		"rtsp://h/vod/s/t":                                 "rtsp://h/vod/s/t",
	} {
		if got := redacted(raw); got != want {
			t.Errorf("redacted(%q) = %q, want %q", raw, got, want)
		}
	}
}

// A URL given without its scheme (or with one slash) is refused quoting
// it as the result names it: the error quoted it whole, token and
// password too.
func TestNotAURLHidesTokenAndPassword(t *testing.T) {
	for raw, want := range map[string]string{
		"127.0.0.1:8554/vod/t?token=eyJ.a.b":      `"127.0.0.1:8554/vod/t?token=xxxxx" is not a URL`,
		"demo:s3cret@127.0.0.1:8554/vod/t":        `"demo:xxxxx@127.0.0.1:8554/vod/t" is not a URL`,
		"rtsp:/demo:s3cret@127.0.0.1/vod/t?a=1":   `"rtsp:/demo:xxxxx@127.0.0.1/vod/t?a=1" is not a URL`,
		"rtsp:127.0.0.1/vod/t?Token=eyJ.a.b&b=%z": `"rtsp:127.0.0.1/vod/t?Token=xxxxx&b=%z" is not a URL`,
	} {
		res, err := Play(context.Background(), raw, Options{})
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "eyJ") {
			t.Errorf("%q: %v, want %q", raw, err, want)
		}
		if strings.Contains(res.URL, "s3cret") || strings.Contains(res.URL, "eyJ") {
			t.Errorf("%q: result names %q", raw, res.URL)
		}
	}
}

// A 401 says what was refused from what the server answered: a Bearer
// challenge is a token refused (an empty ?token= too: it was "no
// credentials"), a node's URL (/s/TOKEN/) its admission token, a token
// the front door did not look at (it asked for a password: no
// subscriber_tokens) is not "refused, no reason given".
func TestUnauthorizedHint(t *testing.T) {
	frontDoor := base.HeaderValue{`Digest realm="vodcluster", nonce="n"`}
	bearer := func(why string) base.HeaderValue {
		return append(base.HeaderValue{`Bearer realm="vodcluster", error="invalid_token", error_description="` + why + `"`}, frontDoor...)
	}
	for _, c := range []struct {
		url  string
		www  base.HeaderValue
		want string
	}{
		{"rtsp://h:8554/vod/t?token=", bearer("token is malformed"), ": the subscriber token in the URL was refused: token is malformed"},
		{"rtsp://h:8554/vod/t?token=eyJ", bearer(`say \"no\"`), `: the subscriber token in the URL was refused: say "no"`},
		{"rtsp://h:8554/vod/t?token=eyJ", frontDoor, ": the front door takes no subscriber tokens (its manager has no subscriber_tokens)"},
		{"rtsp://u:p@h:8554/vod/t?token=eyJ", frontDoor, "password in the URL were refused (a subscriber the users file does not know, or a wrong password); the token in the URL was not looked at"},
		{"rtsp://u:p@h:8554/vod/t", frontDoor, ": the user name and password in the URL were refused"},
		{"rtsp://u@h:8554/vod/t", frontDoor, ": the user name in the URL was refused, and it gives no password"},
		{"rtsp://h:8554/vod/t", frontDoor, ": no credentials: give the subscriber's user name and password in the URL"},
		// The URL forms it gives are RTSPS's for an rtsps:// URL.
		{"rtsps://h:8322/vod/t", frontDoor, ": no credentials: give the subscriber's user name and password in the URL, rtsps://USER:PASSWORD@HOST:PORT/vod/TITLE"},
		{"RTSPS://u@h:8322/vod/t", frontDoor, "no password: rtsps://USER:PASSWORD@"},
		{"rtsp://h:8555/s/abc/vod/t", base.HeaderValue{`Bearer realm="vodcluster", error="invalid_token", error_description="admission token expired"`},
			": the node refused the admission token of the URL (/s/TOKEN/): admission token expired; a node's URL is the front door's redirect"},
		{"rtsp://h:8555/s/abc/vod/t?token=eyJ", nil, ": the node refused the admission token of the URL (/s/TOKEN/): the server gave no reason"},
	} {
		u, err := base.ParseURL(c.url)
		if err != nil {
			t.Fatal(err)
		}
		got := unauthorizedHint(u, &base.Response{StatusCode: base.StatusUnauthorized, Header: base.Header{"WWW-Authenticate": c.www}})
		if !strings.HasPrefix(got, c.want) && !strings.Contains(got, c.want) {
			t.Errorf("%s %q: %q, want %q", c.url, c.www, got, c.want)
		}
	}
	u, _ := base.ParseURL("rtsp://h/vod/t?token=x")
	for _, a := range []*base.Response{nil, {StatusCode: base.StatusForbidden}} {
		if got := unauthorizedHint(u, a); got != "" {
			t.Errorf("%+v: %q, want none", a, got)
		}
	}
}

// A 403 for too many sessions says what ends one; another 403 is left
// as the server said it.
func TestSessionLimitHint(t *testing.T) {
	u, _ := base.ParseURL("rtsp://demo:demo@h:8554/vod/t")
	limit := &base.Response{StatusCode: base.StatusForbidden, StatusMessage: "Forbidden (too many sessions)"}
	if got := sessionLimitHint(u, limit); !strings.Contains(got, "max_sessions_per_user") || !strings.Contains(got, "vodctl sessions end --user demo") {
		t.Errorf("too many sessions: %q", got)
	}
	// Held by redirects no player took up (the manager's reason says
	// how many are not started): they end by themselves.
	redirects := &base.Response{StatusCode: base.StatusForbidden, StatusMessage: "Forbidden (too many sessions: 2 of 2 not started, one ends within 68 s unless its player arrives)"}
	if got := sessionLimitHint(u, redirects); !strings.Contains(got, "redirects to nodes that no player took up") || strings.Contains(got, "stop another of its players") ||
		!strings.Contains(got, "vodctl sessions end --user demo") {
		t.Errorf("too many sessions, not started: %q", got)
	}
	noUser, _ := base.ParseURL("rtsp://h:8554/vod/t?token=x")
	if got := sessionLimitHint(noUser, limit); !strings.Contains(got, "--user USER") {
		t.Errorf("too many sessions, no user in the URL: %q", got)
	}
	for _, a := range []*base.Response{nil, {StatusCode: base.StatusForbidden, StatusMessage: "Forbidden (title not in your packages)"},
		{StatusCode: base.StatusUnauthorized, StatusMessage: "too many sessions"}} {
		if got := sessionLimitHint(u, a); got != "" {
			t.Errorf("%+v: %q, want none", a, got)
		}
	}
}

// A 503 for too many failed logins says when to try again (the
// Retry-After) and how an operator lets the subscriber in; another 503 is
// left as the server said it.
func TestLoginLockHint(t *testing.T) {
	u, _ := base.ParseURL("rtsp://demo:wrong@h:8554/vod/t")
	lock := &base.Response{StatusCode: base.StatusServiceUnavailable, StatusMessage: "Service Unavailable (too many failed logins)",
		Header: base.Header{"Retry-After": base.HeaderValue{"42"}}}
	if got := loginLockHint(u, lock); !strings.Contains(got, "in 42 s (Retry-After)") || !strings.Contains(got, "vodctl unlock demo") {
		t.Errorf("too many failed logins: %q", got)
	}
	for _, a := range []*base.Response{nil, {StatusCode: base.StatusServiceUnavailable, StatusMessage: "Service Unavailable (no node in service)"},
		{StatusCode: base.StatusForbidden, StatusMessage: "too many failed logins"}} {
		if got := loginLockHint(u, a); got != "" {
			t.Errorf("%+v: %q, want none", a, got)
		}
	}
}

// A password that does not parse (a '/', '%', '#', '?', '[' or a space
// in it, not percent-encoded) shows in no part of the error or the
// result: a '/' ended the host early and the error quoted the URL whole
// and `invalid port ":pa" after host`; a bad escape was quoted as it is.
// The error says the password is what does not parse, and to
// percent-encode it.
func TestUnparsablePasswordHidden(t *testing.T) {
	for raw, secret := range map[string]string{
		"rtsp://demo:qj/kw@127.0.0.1:8554/vod/x":          "qj/kw",
		"rtsp://demo:q@127.0.0.2/wz@127.0.0.1:8554/vod/x": "q@127.0.0.2/wz", // were it dialled: a loopback address, never a name to look up
		"rtsp://demo:qj%zzkw@127.0.0.1:8554/vod/x":        "qj%zzkw",
		"rtsp://demo:qj#kw@127.0.0.1:8554/vod/x":          "qj#kw",
		"rtsp://demo:qj?kw@127.0.0.1:8554/vod/x":          "qj?kw",
		"rtsp://demo:qj kw@127.0.0.1:8554/vod/x":          "qj kw",
		"rtsps://demo:qj[kw@127.0.0.1:8322/vod/x":         "qj[kw",
		"rtsp://demo:qj/kw@127.0.0.1:8554/vod/x?a=%z":     "qj/kw",
		// Two of '?' or '#' and no path: shown whole before.
		"rtsp://demo:qj##kw@127.0.0.1:8554":      "qj##kw",
		"rtsp://demo:qj??kw@127.0.0.1:8554":      "qj??kw",
		"rtsp://demo:qj#?#kw@127.0.0.1:8554":     "qj#?#kw",
		"rtsp://demo:qj?x#kw@127.0.0.1:8554?a=b": "qj?x#kw",
	} {
		res, err := Play(context.Background(), raw, Options{})
		if err == nil {
			t.Fatalf("%s: played", raw)
		}
		for _, part := range []string{secret, secret[:2], secret[len(secret)-2:]} {
			if strings.Contains(err.Error(), part) || strings.Contains(res.URL, part) {
				t.Errorf("%s: %q of the password shown: %v; result %q", raw, part, err, res.URL)
			}
		}
		if !strings.Contains(err.Error(), "percent-encode") || !strings.Contains(err.Error(), "demo:xxxxx@127.0.0.1:") {
			t.Errorf("%s: %v, want it to name the password and percent-encoding", raw, err)
		}
	}
	// What does not parse beside the password is said as it was.
	if _, err := Play(context.Background(), "rtsp://demo:qj/kw@127.0.0.1:85x4/vod/x", Options{}); err == nil ||
		!strings.Contains(err.Error(), `invalid port ":85x4" after host`) || strings.Contains(err.Error(), "qj") || strings.Contains(err.Error(), "kw") {
		t.Errorf("bad port beside a bad password: %v", err)
	}
}

// A password whose first characters are digits, followed by a '/', '?'
// or '#' not percent-encoded, parses as the port of a host named as the
// user ("demo:93/kw@HOST" is host demo, port 93): it was shown whole in
// the result and the error, and the client dialled that host. So was the
// part after the first '@' of a password with '@' and '?' or '#'. Each
// is refused before any dial, the password hidden.
func TestDigitPasswordHidden(t *testing.T) {
	for raw, secret := range map[string]string{
		"rtsp://localhost:93/kw@127.0.0.1:8554/vod/x":     "93/kw",
		"rtsp://localhost:93?kw@127.0.0.1:8554/vod/x":     "93?kw",
		"rtsp://localhost:93#kw@127.0.0.1:8554/vod/x":     "93#kw",
		"rtsp://demo:q@localhost?wz@127.0.0.1:8554/vod/x": "localhost?wz",
		"rtsp://demo:q@localhost#wz@127.0.0.1:8554/vod/x": "localhost#wz",
		"rtsps://localhost:93/kw@[::1]:8322/vod/x":        "93/kw",
		"rtsp://localhost:93/kw@127.0.0.1:8554/s/tok/":    "93/kw",
		// An '@' of the query or fragment besides ("?a=b@c" is no
		// password: TestAtInQueryIsNoPassword), or a '?' in the
		// password before a host and a path.
		"rtsp://localhost:93/k?w@127.0.0.1:8554/vod/x":      "93/k?w",
		"rtsp://localhost:93/kw@127.0.0.1:8554/vod/x?a=b@c": "93/kw",
		"rtsp://localhost:93?kw@127.0.0.1:8554/vod/x#a@b":   "93?kw",
		"rtsp://localhost:93#k/w@127.0.0.1:8554/vod/x":      "93#k/w",
	} {
		if shown := Redacted(raw); strings.Contains(shown, secret[:2]) || strings.Contains(shown, secret[len(secret)-2:]) {
			t.Errorf("Redacted(%s) = %q: the password shows", raw, shown)
		}
		res, err := Play(context.Background(), raw, Options{})
		if err == nil {
			t.Fatalf("%s: played", raw)
		}
		for _, part := range []string{secret[:2], secret[len(secret)-2:]} {
			if strings.Contains(err.Error(), part) || strings.Contains(res.URL, part) {
				t.Errorf("%s: %q of the password shown: %v; result %q", raw, part, err, res.URL)
			}
		}
		if !strings.Contains(err.Error(), "percent-encode") {
			t.Errorf("%s: %v, want it to say to percent-encode the password", raw, err)
		}
	}
	// An '@' only in the user name, and a URL with no password, play on.
	for _, raw := range []string{"rtsp://a@b.example:93@127.0.0.1:1/vod/x", "rtsp://demo@127.0.0.1:1/vod/x", "rtsp://127.0.0.1:1/vod/x"} {
		if _, err := Play(context.Background(), raw, Options{}); err == nil || strings.Contains(err.Error(), "percent-encode") {
			t.Errorf("%s: %v, want a dial error", raw, err)
		}
	}
}

// An '@' in the query or fragment of a URL with a port and no password
// ("rtsp://h:8554/vod/x?foo=a@b") was refused as a password that does
// not parse ("percent-encode"): the check took the whole URL after the
// host's ':' for a password. That '@' is the query's own; an '@' right
// after a '/', '?' or '#' that follows digits ("demo:93/kw@HOST", a
// password of digits and a '/') or before a host and a path
// ("demo:93/k?w@HOST/vod/x") still ends a password: refused, hidden
// (TestDigitPasswordHidden).
func TestAtInQueryIsNoPassword(t *testing.T) {
	for _, raw := range []string{
		"rtsp://h:8554/vod/x?foo=a@b", "rtsp://h/vod/x#a@b", "rtsp://h:8554/vod/x#a@b",
		"rtsp://h:8554/vod/x?foo=a@b&c=d#e@f", "rtsps://[::1]:8322/vod/x?from=ops@example.net",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if passwordSpills(raw, u) || Redacted(raw) != raw {
			t.Errorf("%s: taken for a password (shown as %q)", raw, Redacted(raw))
		}
	}
	// With a password before the host: played (a dial error, not
	// "percent-encode"), but shown hidden up to the last '@', which may
	// yet end the password (the password showed when it did:
	// "rtsp://u:xxxxx@h:8554/vod/x?x=a@b/c" of a password "p@h:8554/vod/x?x=a").
	for raw, shown := range map[string]string{
		"rtsp://u:p@h:8554/vod/x?x=a@b/c":           "rtsp://u:xxxxx@b/c",
		"rtsp://u:s3cr3t@h/vod/x#f@g":               "rtsp://u:xxxxx@g",
		"rtsps://u:pw@[::1]:8322/s/tok/vod/x?e=a@b": "rtsps://u:xxxxx@b",
		// An '@' percent-encoded, as the refusal says to write it: the
		// password's own, not a second '@' before the host.
		"rtsp://u:p%40ss@h:8554/vod/x": "rtsp://u:xxxxx@h:8554/vod/x",
		// So in the path or fragment: no password's end (the password
		// "p" was refused as one to percent-encode).
		"rtsp://u:p@h:8554/vod/a%40b":         "rtsp://u:xxxxx@h:8554/vod/a%40b",
		"rtsp://u:p@h:8554/s/t%40k/vod/a#%40": "rtsp://u:xxxxx@h:8554/s/xxxxx/vod/a#%40",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if passwordSpills(raw, u) || Redacted(raw) != shown {
			t.Errorf("%s: taken for a password that spills (shown as %q, want %q)", raw, Redacted(raw), shown)
		}
	}
	for _, raw := range []string{"rtsp://u:secret@127.0.0.1:1/vod/x?x=a@b/c", "rtsp://u:s3cr3t@127.0.0.1:1/vod/x#f@g"} {
		res, err := Play(context.Background(), raw, Options{})
		if err == nil || strings.Contains(err.Error(), "percent-encode") || strings.Contains(err.Error()+res.URL, "cr") {
			t.Errorf("%s: %v (result URL %q), want a dial error, the password hidden", raw, err, res.URL)
		}
	}
	for _, raw := range []string{"rtsp://127.0.0.1:1/vod/x?foo=a@b", "rtsp://127.0.0.1:1/vod/x#a@b"} {
		res, err := Play(context.Background(), raw, Options{})
		if err == nil || strings.Contains(err.Error(), "percent-encode") || res.URL != raw {
			t.Errorf("%s: %v (result URL %q), want a dial error (a fragment: not supported), the URL shown whole", raw, err, res.URL)
		}
	}
}

// With a password, an '@' in the query or fragment after a path that is
// not a title's was the query's own unless a port, a dot, brackets or
// localhost, or a host and a path followed it: a password ending in a
// word alone ("rtsp://u:p@h:8554/x?a=wd@vodfront", host vodfront) was
// taken for the query's, its host and path sent a part of the password
// and shown. After a path that is not a title's (/vod/, /s/), or none,
// such an '@' may end a password: refused and hidden up to it, whatever
// follows. So is a password with an '@' in it as parsed (two '@' before
// the host: "u:pw@127.0.0.1:8554@x/sample-001"), the host after them
// perhaps a mistake. After a title's path the '@' is the query's own
// (TestAtInQueryIsNoPassword).
func TestAtInQueryAfterOtherPath(t *testing.T) {
	for raw, shown := range map[string]string{
		"rtsp://u:s3cr3t@h:8554/x?a=b@c":                 "rtsp://u:xxxxx@c",
		"rtsp://u:s3cr3t@h/live/x?a=b@c&d=e#f@g":         "rtsp://u:xxxxx@g",
		"rtsps://u:s3cr3t@[::1]:8322/x#from=a@b":         "rtsps://u:xxxxx@b",
		"rtsp://u:p@h:8554/x?a=wd@vodfront":              "rtsp://u:xxxxx@vodfront",
		"rtsp://u:s3cr3t@h:8554/x/y.ts?a=b@c.d/e":        "rtsp://u:xxxxx@c.d/e",
		"rtsp://demo:q@ss/x?wd@127.0.0.1/vod/x":          "rtsp://demo:xxxxx@127.0.0.1/vod/x",
		"rtsp://demo:q@ss/x#wd@127.0.0.1/vod/x":          "rtsp://demo:xxxxx@127.0.0.1/vod/x",
		"rtsp://u:s3cr3t@h:8554?a=b@c":                   "rtsp://u:xxxxx@c",
		"rtsp://demo:q@ss/x?wd@127.0.0.1:8554":           "rtsp://demo:xxxxx@127.0.0.1:8554",
		"rtsp://demo:q@ss/x?wd@vod.example.net?a":        "rtsp://demo:xxxxx@vod.example.net?a",
		"rtsp://demo:q@ss/x#wd@[::1]:8554":               "rtsp://demo:xxxxx@[::1]:8554",
		"rtsp://u:pw@127.0.0.1:8554@x/sample-001":        "rtsp://u:xxxxx@x/sample-001",
		"rtsp://u:pa@ss@h/vod/x?a=b":                     "rtsp://u:xxxxx@h/vod/x?a=b",
		"rtsp://u:s3cr3t@127.0.0.1:8554@h:1/vod/x?a=b@c": "rtsp://u:xxxxx@c",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if !passwordSpills(raw, u) {
			t.Errorf("%s: not taken for a password that may spill", raw)
		}
		if r := Redacted(raw); r != shown {
			t.Errorf("Redacted(%s) = %q, want %q", raw, r, shown)
		}
		res, err := Play(context.Background(), raw, Options{Transport: "none"})
		if err == nil || !strings.Contains(err.Error(), "percent-encode") || res.URL != shown {
			t.Errorf("%s: %v (result URL %q), want it refused, shown as %q", raw, err, res.URL, shown)
		}
		if strings.Contains(u.RawQuery+u.Fragment, "@") != (err != nil && strings.Contains(err.Error(), "write it as %40")) {
			t.Errorf("%s: %v: the hint for the query's '@' only with one", raw, err)
		}
	}
}

// A URL that does not parse showed what hidePassword took for no
// password: "rtsp://u:p/x?y@127.0.0.1:85540" (its '@' after a '/' and a
// '?' read as the query's) was quoted whole, and the reason named a part
// of the password (`invalid port ":p" after host`). All of it from the
// first ':' to the last '@' is hidden now.
func TestUnparsableHidesToLastAt(t *testing.T) {
	for raw, shown := range map[string]string{
		"rtsp://u:p/x?y@127.0.0.1:85540":       "rtsp://u:xxxxx@127.0.0.1:85540",
		"rtsp://u:pw/x?y@127.0.0.1:bad/vod/x":  "rtsp://u:xxxxx@127.0.0.1:bad/vod/x",
		"rtsp://u:p%zz@127.0.0.1:8554/vod/x":   "rtsp://u:xxxxx@127.0.0.1:8554/vod/x",
		"rtsp://h:bad/vod/x":                   "rtsp://h:bad/vod/x",
		"rtsp://u:p q/x?y@127.0.0.1:8554#z@w:": "rtsp://u:xxxxx@w:",
	} {
		res, err := Play(context.Background(), raw, Options{Transport: "none"})
		if res.URL != shown || err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", shown)) {
			t.Errorf("%s: %v (result URL %q), want it shown as %q", raw, err, res.URL, shown)
		}
		if shown != raw && (strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), ":p")) {
			t.Errorf("%s: %v: the password shows", raw, err)
		}
	}
}
