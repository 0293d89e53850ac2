package probe

import (
	"errors"
	"net/url"
	"regexp"
	"strings"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/bluenviron/gortsplib/v4/pkg/liberrors"
)

// bearerDescription is the error_description of a Bearer challenge (RFC
// 6750 §3), the front door's reason for refusing a subscriber token, or
// a node's for refusing the admission token of its URL.
var bearerDescription = regexp.MustCompile(`error_description="((?:[^"\\]|\\.)*)"`)

// bearerChallenge reports whether answer carries a Bearer challenge, and
// its error_description ("" when it gives none).
func bearerChallenge(answer *base.Response) (reason string, ok bool) {
	for _, h := range answer.Header["WWW-Authenticate"] {
		if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(h)), "bearer") {
			continue
		}
		if m := bearerDescription.FindStringSubmatch(h); m != nil {
			return strings.ReplaceAll(strings.ReplaceAll(m[1], `\"`, `"`), `\\`, `\`), true
		}
		ok = true
	}
	return "", ok
}

// unauthorizedHint says, for a DESCRIBE of u answered 401 by the server u
// names, what was refused. At the front door: the subscriber token (the
// answer has a Bearer challenge, with the front door's reason: expired,
// bound to another client address, malformed, ...); the user name and
// password of u; a token the front door does not take (u has one, the
// answer asks for a password: no manager.subscriber_tokens); or nothing,
// u carrying neither. At a node (u's path is /s/TOKEN/..., the URL the
// front door redirects to): its admission token, with the node's reason.
// It is "" for any other answer (nil too). The status line alone ("401
// (Unauthorized)") did not tell these apart.
func unauthorizedHint(u *base.URL, answer *base.Response) string {
	if answer == nil || answer.StatusCode != base.StatusUnauthorized {
		return ""
	}
	uu := (*url.URL)(u)
	scheme := strings.ToLower(uu.Scheme) // the URL forms given are of the scheme asked for, rtsps too
	reason, bearer := bearerChallenge(answer)
	if reason == "" {
		reason = "the server gave no reason"
	}
	if strings.HasPrefix(uu.Path, "/s/") {
		return ": the node refused the admission token of the URL (/s/TOKEN/): " + reason +
			"; a node's URL is the front door's redirect, good for one viewer from one address for a short time: play the front door's, " + scheme + "://HOST:PORT/vod/TITLE"
	}
	if bearer {
		return ": the subscriber token in the URL was refused: " + reason
	}
	_, hasToken := uu.Query()["token"]
	if uu.User != nil {
		hint := ": the user name and password in the URL were refused (a subscriber the users file does not know, or a wrong password)"
		if _, ok := uu.User.Password(); !ok {
			hint = ": the user name in the URL was refused, and it gives no password: " + scheme + "://USER:PASSWORD@HOST:PORT/vod/TITLE"
		}
		if hasToken {
			hint += "; the token in the URL was not looked at: this front door takes no subscriber tokens (manager.subscriber_tokens)"
		}
		return hint
	}
	if hasToken {
		return ": the front door takes no subscriber tokens (its manager has no subscriber_tokens) and asked for a user name and password: " + scheme + "://USER:PASSWORD@HOST:PORT/vod/TITLE"
	}
	return ": no credentials: give the subscriber's user name and password in the URL, " + scheme + "://USER:PASSWORD@HOST:PORT/vod/TITLE, or a subscriber token, ?token=JWT"
}

// sessionLimitHint says, for a DESCRIBE of u answered 403 "Forbidden (too
// many sessions)" by the front door, why and what ends a session: the
// subscriber holds as many as the manager's max_sessions_per_user allows,
// or, when the reason says some are not started, redirects no player took
// up hold them until their no-show. It is "" for any other answer (nil
// too).
func sessionLimitHint(u *base.URL, answer *base.Response) string {
	if answer == nil || answer.StatusCode != base.StatusForbidden || !strings.Contains(answer.StatusMessage, "too many sessions") {
		return ""
	}
	user := "USER"
	if u.User != nil && u.User.Username() != "" {
		user = u.User.Username()
	}
	if strings.Contains(answer.StatusMessage, "not started") {
		// The manager counted redirects its players have not taken up
		// (requests asked again and again, players that gave up): they
		// end on their own at their no-show.
		return ": the subscriber's earlier requests hold redirects to nodes that no player took up (max_sessions_per_user counts them); " +
			"ask again when one ends, or end them now (vodctl sessions end --user " + user + ")"
	}
	return ": the subscriber already holds as many sessions as the manager allows at once (max_sessions_per_user); " +
		"stop another of its players, or end its sessions (vodctl sessions end --user " + user + "); " +
		"a session silent longer than its node's session_timeout (60 s unless set) is taken over by the subscriber's next request"
}

// redirectRefusalHint says, for a DESCRIBE that failed at node (host:port)
// after the front door's redirect, answered answer (nil when the client
// got none) with err, that the node refused the admission token of the
// redirect, with the node's reason: a 401 there was the bare "401
// (Unauthorized)", and with a user name and password in the URL (which
// the client offers the node too) "unable to setup authentication: no
// authentication methods available", read as the password refused. It
// is "" for any other failure.
func redirectRefusalHint(node string, answer *base.Response, err error) string {
	if answer != nil && answer.StatusCode == base.StatusUnauthorized {
		reason, _ := bearerChallenge(answer)
		if reason == "" {
			reason = "the node gave no reason"
		}
		return ": the node " + node + " refused the admission token of the front door's redirect: " + reason
	}
	var setup liberrors.ErrClientAuthSetup
	if errors.As(err, &setup) {
		// Only a 401 makes the client set up authentication.
		return ": the node " + node + " answered 401: it refused the admission token of the front door's redirect " +
			"(not the user name and password, which the front door took)"
	}
	return ""
}

// loginLockHint says, for a DESCRIBE of u answered 503 "Service
// Unavailable (too many failed logins)" by the front door, why and when
// the subscriber may log in again: the front door counted too many wrong
// passwords for it from this address (or over all addresses), and takes
// none for the Retry-After it answered (seconds), unless an operator
// forgets them (vodctl unlock USER; a limit on the address over all user
// names is not the subscriber's and is left). It is "" for any other
// answer (nil too).
func loginLockHint(u *base.URL, answer *base.Response) string {
	if answer == nil || answer.StatusCode != base.StatusServiceUnavailable || !strings.Contains(answer.StatusMessage, "too many failed logins") {
		return ""
	}
	user := "USER"
	if u.User != nil && u.User.Username() != "" {
		user = u.User.Username()
	}
	when := "later"
	if v := answer.Header["Retry-After"]; len(v) > 0 && strings.TrimSpace(v[0]) != "" {
		when = "in " + strings.TrimSpace(v[0]) + " s (Retry-After)"
	}
	return ": the front door refuses logins for now after too many wrong passwords (login_failures); " +
		"try again " + when + " with the right password, or an operator lets the subscriber in at once: vodctl unlock " + user
}
