package probe

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// redacted returns rawURL with its password, if any, replaced by "xxxxx"
// (url.URL.Redacted), and so the value of its subscriber token
// (?token=, a bearer credential good until it expires) and the admission
// token of a node's URL (/s/TOKEN/, the front door's redirect), for what
// the client prints: a result pasted into a ticket must not carry the
// subscriber's password or a token. A URL that does not parse has them
// replaced as text.
func redacted(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		// Where its password ends is anyone's guess: all that may be
		// one is hidden (hideAll).
		return hideToken(hideAll(rawURL))
	}
	if !strings.Contains(rawURL, "://") {
		// One without "://" too (Play refuses it): USER:PASSWORD@HOST/...
		// given without its scheme parses as scheme USER and opaque
		// data, rtsp:/USER:PASSWORD@HOST/... as a path, which Redacted
		// keeps as they are.
		return hideToken(hidePassword(rawURL))
	}
	if passwordSpills(rawURL, u) {
		return hideToken(hidePassword(rawURL))
	}
	if atMayEndPassword(rawURL, u) {
		// Played, perhaps (an '@' of the query after a title's path),
		// but the '@' may yet end a password: what lies before it is not
		// shown ("rtsp://u:xxxxx@b/c" for u:p@h:8554/vod/x?x=a@b/c).
		return hideToken(hideAll(rawURL))
	}
	return hideToken(u.Redacted())
}

// passwordSpills reports whether u, rawURL parsed, may have taken a part
// of a password for its host, path, query or fragment, or a host for a
// part of its password: u's password has an '@' in it (two before the
// host, "u:pw@127.0.0.1:8554@x/..."), or an '@' follows its authority
// (in the path, query or fragment) and u has a password, or rawURL has
// what hidePassword takes for one. A password with '@' and '/' in it,
// not percent-encoded, ends at its first '@' as parsed
// ("demo:p@ss/wd@HOST/" is password "p" at host "ss"; so with '?' or '#'
// for '/'), and one of digits before a '/', '?' or '#' is no password at
// all: "demo:93/kw@HOST/" is host "demo", port 93 and path "/kw@HOST/",
// shown whole and dialled. No title id nor token has an '@'; a query or
// fragment may ("rtsp://HOST:8554/vod/x?from=a@b"): that is no password,
// with a password before the host too ("rtsp://u:p@HOST/vod/x?from=a@b/c")
// when a title's path (/vod/..., a node's /s/TOKEN/...) comes before it.
// After any other path, or none, the '@' may end a password with '/' and
// '?' in it before any host, a word alone too
// ("u:p@h:8554/x?a=wd@vodfront" may be host vodfront and no path): it
// spills.
func passwordSpills(rawURL string, u *url.URL) bool {
	if _, has := u.User.Password(); has && twoAtsBeforeHost(rawURL) {
		// Two '@' before the host ("u:pw@127.0.0.1:8554@x/..."): the
		// password as parsed runs to the last one, a host and a port in
		// it; or the password ended at the first and the rest is a
		// mistake. Neither is dialled. One percent-encoded ("%40", as
		// the refusal says to write it) is the password's own.
		return true
	}
	// As written: a percent-encoded '@' ("/vod/a%40b") is no password's end.
	path, frag := u.EscapedPath(), u.EscapedFragment()
	if !strings.Contains(path, "@") && !strings.Contains(u.RawQuery, "@") && !strings.Contains(frag, "@") {
		return false
	}
	if _, has := u.User.Password(); has {
		// After a title's path (/vod/..., a node's /s/TOKEN/...), the
		// query's or fragment's own. After any other path, the '@' may
		// end a password with '/' and '?' in it before any host, a word
		// alone too ("u:p@h:8554/x?a=wd@vodfront": host vodfront): it
		// is refused and hidden.
		return strings.Contains(path, "@") || !(strings.HasPrefix(u.Path, "/vod/") || strings.HasPrefix(u.Path, "/s/"))
	}
	return hidePassword(rawURL) != rawURL
}

// twoAtsBeforeHost reports whether the password of rawURL's authority
// as written (after "://", up to the first '/', '?' or '#'; the password
// from the first ':' to the last '@') has an '@' not percent-encoded:
// "u:pw@127.0.0.1:8554@x", not "u:p%40ss@x", whose password, decoded,
// has one as well, nor "a@b.example:93@x", whose user name has it.
func twoAtsBeforeHost(rawURL string) bool {
	_, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return false
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return false
	}
	_, password, has := strings.Cut(rest[:at], ":")
	return has && strings.Contains(password, "@")
}

// hostThenPath is an '@' followed by a host (and port) and a '/': where a
// password ends, before the host and the title's path.
var hostThenPath = regexp.MustCompile(`@[^/?#@]+/`)

// hostAtEnd is an '@' followed by what reads as a host with no path: a
// port, a dotted name or address, a bracketed IPv6 address or
// localhost, then the end, a query or a fragment. A password with '@',
// '/' and '?' in it, before the host of a URL given without its path
// ("demo:q@ss/x?wd@127.0.0.1:8554"), ends there: the parser's host
// ("ss") is a part of it, not to be dialled nor shown. A word alone
// ("?a=b@c") is the query's own.
var hostAtEnd = regexp.MustCompile(`@(?:[^/?#@]*[.:\]][^/?#@]*|localhost)(?:[?#]|$)`)

// userinfoAt reports whether an '@' after the authority rawURL's parser
// sees (up to the first '/', '?' or '#' after "://"; no '@' in it) may
// end a password that has one of those characters in it: an '@' before
// the next '?' or '#' after that one ("demo:93/kw@HOST", "demo:93?kw@HOST",
// "demo:93#kw@HOST"), or one followed by a host and a path
// ("demo:93/k?w@HOST/vod/x"), or, with no path, by a host alone
// (hostAtEnd: "demo:qj##kw@HOST:8554"). An '@' in a query or fragment after the
// path otherwise is the query's or fragment's own
// ("HOST:8554/vod/x?from=a@b", "HOST/vod/x#a@b"). Without "://": true.
func userinfoAt(rawURL string) bool {
	_, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return true
	}
	i := strings.IndexAny(rest, "/?#")
	if i < 0 {
		return false
	}
	after := rest[i+1:]
	first := after
	if j := strings.IndexAny(after, "?#"); j >= 0 {
		first = after[:j]
	}
	// With no path ('?' or '#' right after the parser's authority), an
	// '@' then a host at the end ends a password with two of '?' or '#'
	// in it ("demo:qj##kw@HOST:8554"): there is no query of a path to own it.
	return strings.Contains(first, "@") || hostThenPath.MatchString(after) || rest[i] != '/' && hostAtEnd.MatchString(after)
}

// badPassword says what to do about a password that a URL cannot carry
// as it is.
const badPassword = "the password has characters a URL cannot carry as they are (such as / ? # @ % [ ] or a space): percent-encode them (/ as %2F, ? as %3F, # as %23, @ as %40, % as %25, space as %20)"

// Redacted returns rawURL as the client prints it: its password, its
// subscriber token (?token=) and a node URL's admission token (/s/TOKEN/)
// replaced by "xxxxx", the rest as it is (a URL that does not parse, or
// a word that is no URL, too). vodctl quotes its arguments so.
func Redacted(rawURL string) string { return redacted(rawURL) }

// nodeToken is the admission token of a node's URL, what follows "/s/"
// at the start of its path: rtsp://NODE/s/TOKEN/vod/TITLE.
var nodeToken = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*://[^/?#]*/s/)[^/?#]+`)

// hideToken replaces the admission token of a node's URL (/s/TOKEN/) and
// the value of each token parameter of rawURL's query (what lies between
// '?' and '#'; the name in any letter case, "Token" being a token
// mistyped) by "xxxxx", the rest as it is.
func hideToken(rawURL string) string {
	rawURL = nodeToken.ReplaceAllString(rawURL, "${1}xxxxx")
	q := strings.IndexByte(rawURL, '?')
	if q < 0 {
		return rawURL
	}
	query, frag := rawURL[q+1:], ""
	if i := strings.IndexByte(query, '#'); i >= 0 {
		query, frag = query[:i], query[i:]
	}
	parts := strings.Split(query, "&")
	for i, p := range parts {
		k, _, ok := strings.Cut(p, "=")
		if key, err := url.QueryUnescape(k); ok && err == nil && strings.EqualFold(key, "token") {
			parts[i] = k + "=xxxxx"
		}
	}
	return rawURL[:q+1] + strings.Join(parts, "&") + frag
}

// hidePassword replaces the password of rawURL, a URL that does not
// parse, by "xxxxx": what lies between the first ':' and the last '@' of
// its authority (after "://", up to the next '/'; without "://", after
// a scheme and the slashes that follow it, "rtsp:/", or else from the
// start: USER:PASSWORD@HOST/... given without its scheme). An '@' past
// the first '/', '?' or '#' after "://" ends a password only as
// userinfoAt says: "HOST:8554/vod/x?from=a@b" has none.
func hidePassword(rawURL string) string {
	start := 0
	if _, rest, ok := strings.Cut(rawURL, "://"); ok {
		start = len(rawURL) - len(rest)
	} else if m := schemeSlashes.FindString(rawURL); m != "" {
		start = len(m)
	}
	rest := rawURL[start:]
	auth := rest
	if i := strings.IndexByte(auth, '/'); i >= 0 {
		auth = auth[:i]
	}
	// The password ends at the last '@': one with '/' in it (not
	// percent-encoded) ended the authority early, and what followed it was
	// shown. A URL with '@' in its path and a port is hidden past the
	// port: too much hidden, never a part of a password shown.
	at := strings.LastIndexByte(rest, '@')
	colon := strings.IndexByte(auth, ':')
	host := 0 // where the '@' that may end a password is looked for
	if end := bracketedHostEnd(rest); end > 0 {
		// An IPv6 address's colons are no password's, and a user name
		// without one before it ends at its '@': after the address, its
		// port's ("demo@[::1]:1/vod/x?a=b@c" was hidden from the
		// address's first colon, "demo@[:xxxxx@c").
		host = strings.IndexByte(rest, '[')
		if colon = strings.IndexByte(auth[min(end, len(auth)):], ':'); colon >= 0 {
			colon += end
		}
	}
	if at < 0 || colon < 0 || colon > at {
		return rawURL
	}
	if i := strings.IndexAny(rest[host:], "/?#@"); (i < 0 || rest[host+i] != '@') && !userinfoAt(rawURL) {
		return rawURL // an '@' of the query or fragment, after a port
	}
	return rawURL[:start+colon+1] + "xxxxx" + rawURL[start+at:]
}

// parseError explains err, the failure to parse rawURL, shown as shown
// (rawURL redacted), with no part of rawURL's password: url.Error quoted
// the URL whole, and its reason a part of the password too (a '/' in it
// ends the host early: `invalid port ":pa" after host`; `invalid URL
// escape "%zz"`). The URL with its password replaced is parsed again: when
// that parses, the password is what does not, and the error says so and
// how to write it; when not, its reason names no part of the password.
func parseError(rawURL, shown string, err error) error {
	hide, hint := hidePassword, ""
	if u, uerr := url.Parse(rawURL); uerr == nil && !passwordSpills(rawURL, u) {
		// The password parses (an '@' of the query or fragment is the
		// query's own): the error is about something else (a fragment).
		hide = func(s string) string { return s }
	} else if uerr != nil {
		// Its reason may quote any part of it ("invalid port \":p\"
		// after host" of u:p/x?y@HOST): all that may be a password
		// is hidden.
		hide = hideAll
	} else {
		hint = queryAtHint(u)
	}
	if hidden := hide(rawURL); hidden != rawURL {
		_, herr := base.ParseURL(hidden)
		if herr == nil {
			return fmt.Errorf("probe: parse %q: %s%s", shown, badPassword, hint)
		}
		err = herr
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		// It quoted the URL whole, password and all.
		return fmt.Errorf("probe: parse %q: %w", shown, ue.Err)
	}
	return fmt.Errorf("probe: %w", err)
}

// atMayEndPassword reports whether an '@' past the authority of u,
// rawURL parsed, may end a password that a ':' after "://" begins: one
// in its path, query or fragment, after a ':' (a port's too: "h:93/x?a=b@c"
// is user h, password "93/x?a=b" at host c as well as a query's '@'),
// unless it is the query's or fragment's own '@' after a title's path
// (/vod/..., a node's /s/TOKEN/...) in a URL without a password
// ("rtsp://h:8554/vod/x?from=a@b", shown whole).
func atMayEndPassword(rawURL string, u *url.URL) bool {
	path := u.EscapedPath() // as written: "%40" is no '@'
	if !strings.Contains(path+u.RawQuery+u.EscapedFragment(), "@") || hideAll(rawURL) == rawURL {
		return false
	}
	_, has := u.User.Password()
	titled := strings.HasPrefix(u.Path, "/vod/") || strings.HasPrefix(u.Path, "/s/")
	return has || !titled || strings.Contains(path, "@")
}

// hideAll replaces by "xxxxx" all of rawURL, a URL that does not parse,
// that may be a password: from the first ':' after "://" (or after a
// scheme and its slashes, or from the start, as hidePassword) to the
// last '@', when the ':' comes first. A password with '/', '?' or '#'
// in it, not percent-encoded, ends nowhere the parser can tell
// ("rtsp://u:p/x?y@127.0.0.1:85540": its host u, its port p, its query
// y@...): hidePassword's reading of the '@' as the query's own showed it.
func hideAll(rawURL string) string {
	start := 0
	if _, rest, ok := strings.Cut(rawURL, "://"); ok {
		start = len(rawURL) - len(rest)
	} else if m := schemeSlashes.FindString(rawURL); m != "" {
		start = len(m)
	}
	rest := rawURL[start:]
	at, colon := strings.LastIndexByte(rest, '@'), strings.IndexByte(rest, ':')
	if end := bracketedHostEnd(rest); end > 0 {
		// An IPv6 address's colons are no password's: after it, its port's.
		if colon = strings.IndexByte(rest[end:], ':'); colon >= 0 {
			colon += end
		}
	}
	if at < 0 || colon < 0 || colon > at {
		return rawURL
	}
	return rawURL[:start+colon+1] + "xxxxx" + rawURL[start+at:]
}

// bracketedHostEnd returns the index in rest, a URL's authority and what
// follows it, of the ']' that closes an IPv6 host at its start or after
// a user name without a password ("[::1]:8554/...", "demo@[::1]:8554/..."),
// or -1 when there is none: the colons in the brackets are the address's,
// not a password's (hideAll hid "demo@[::1]:1/vod/x?a=b@c" from the
// address's first colon, "demo@[:xxxxx@c").
func bracketedHostEnd(rest string) int {
	open := strings.IndexByte(rest, '[')
	if open < 0 {
		return -1
	}
	if user := rest[:open]; user != "" && (!strings.HasSuffix(user, "@") || strings.ContainsAny(user, ":/?#") || strings.Count(user, "@") > 1) {
		return -1
	}
	end := strings.IndexByte(rest[open:], ']')
	if end < 0 || !isIPv6(rest[open+1:open+end]) {
		return -1
	}
	return open + end
}

// schemeSlashes is a scheme followed by one slash or more: "rtsp:/".
var schemeSlashes = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:/+`)

// queryAtHint adds to the refusal of u (passwordSpills) what to do
// when its '@' is the query's or fragment's after a path that is not a
// title's, which is taken for a password's end: "" when there is none.
func queryAtHint(u *url.URL) string {
	if !strings.Contains(u.RawQuery, "@") && !strings.Contains(u.EscapedFragment(), "@") {
		return ""
	}
	return "; or, if the '@' after the path is the query's, write it as %40 (after a path that is not a title's, /vod/TITLE, it may end a password)"
}

// isIPv6 reports whether s, what lies between brackets, is an IPv6
// address (with a zone, "fe80::1%25eth0", too).
func isIPv6(s string) bool {
	addr, _, _ := strings.Cut(s, "%")
	ip := net.ParseIP(addr)
	return ip != nil && strings.Contains(addr, ":")
}

// playedURL returns rawURL, parsed as u, as the report of a play that
// worked shows it: its password and tokens replaced by "xxxxx", the rest
// as parsed and dialled (its host, path, query and fragment whole). A
// URL written without "://" or whose password may spill (Play refuses
// both before it dials) is shown as redacted shows it.
func playedURL(rawURL string, u *url.URL) string {
	if !strings.Contains(rawURL, "://") || passwordSpills(rawURL, u) {
		return redacted(rawURL)
	}
	return hideToken(u.Redacted())
}
