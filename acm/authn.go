package acm

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"vodcluster/acm/auth"
	"vodcluster/acm/boss"
	"vodcluster/proto/durtext"
)

// retryLater is a refusal (errThrottled, errRateLimited) with the time
// until the client may try again.
type retryLater struct {
	err  error
	wait time.Duration
}

func (t retryLater) Error() string { return t.err.Error() }
func (t retryLater) Unwrap() error { return t.err }

// retryAfter returns err's wait (a retryLater's) in whole seconds, at
// least 1, for a Retry-After header.
func retryAfter(err error) string {
	var t retryLater
	s := 1
	if errors.As(err, &t) {
		s = max(int(math.Ceil(t.wait.Seconds())), 1)
	}
	return strconv.Itoa(s)
}

// authenticate checks the Authorization header value sent with a request
// of method for target (its URL: absolute for RTSP, path and query for
// HTTP) by the client at ip. A Digest uri must name target
// (sameResource). It returns the user, or
// errUnauthorized (errChallenge when there was no header, or the only
// fault was a Digest nonce expired or a Digest response already accepted
// once: then stale is true and the client may retry with a fresh nonce,
// see auth.Replays), a retryLater
// wrapping errThrottled (the client IP and user name, the client IP over
// all user names, or the user name over all client IPs ran out of failed
// logins: see loginGuard) or errUnavailable (the BOSS failed). The
// credentials that last failed for the user from ip, sent again, are
// refused (errUnauthorized) without a check or a charge
// (loginGuard.repeated). Digest is accepted only when
// digest is true.
func (m *Manager) authenticate(ctx context.Context, method string, target *url.URL, header, ip string, digest bool) (user string, stale bool, err error) {
	if header == "" {
		return "", false, errChallenge
	}
	c, err := auth.Parse(header, method)
	if err != nil {
		m.log.Debug("authorization header refused", "err", err)
		return "", false, errUnauthorized
	}
	expired := false
	if d := c.Digest; d != nil {
		if !digest {
			return "", false, errUnauthorized
		}
		switch err := m.nonces.Check(d.Nonce, m.now()); {
		case errors.Is(err, auth.ErrNonceStale):
			expired = true // stale=true only if the response is right (RFC 7616 section 3.3)
		case err != nil:
			return "", false, errUnauthorized
		}
		if !sameResource(d.URI, target) {
			m.log.Debug("digest uri is not the request's URL", "uri", d.URI, "url", target.String(), "client", ip)
			return "", false, errUnauthorized
		}
	}
	cred := credKeyOf(header)
	if m.logins.repeated(ip, c.User, cred, m.now()) {
		m.log.Debug("authentication failed again with the same credentials", "user", c.User, "method", method, "client", ip)
		return "", false, errUnauthorized
	}
	ok, wait, done := m.logins.take(ctx, ip, c.User, cred, c.Digest == nil, m.now())
	if !ok {
		if ctx.Err() != nil {
			return "", false, ctx.Err() // left while waiting for its check
		}
		m.capRefusals.logFrom(m.log, m.now(), refusedLogins, ip, c.User, slog.LevelWarn, "login refused: too many failed logins", "user", c.User, "client", ip, "retry_after", durtext.About(wait),
			"limit", m.logins.refusedBy(ip, c.User, m.now())) // pair, address, or user over all addresses
		return "", false, retryLater{errThrottled, wait}
	}
	bctx := ctx
	if m.logins.isKnown(ip, c.User, m.now()) {
		bctx = boss.WithPriority(ctx) // its bcrypt before the guesses of unknown names
	}
	err = m.BOSS.Authenticate(bctx, c)
	switch {
	case err == nil:
		done(checkPassed, m.now())
	case errors.Is(err, boss.ErrUnauthorized):
		done(checkFailed, m.now())
	default: // left while it waited, or the backend failed: neither
		done(checkUndecided, m.now())
	}
	switch {
	case errors.Is(err, boss.ErrUnauthorized):
		m.capRefusals.logFrom(m.log, m.now(), refusedCredentials, ip, c.User, slog.LevelInfo, "authentication failed", "user", c.User, "method", method, "client", ip)
		return "", false, errUnauthorized
	case ctx.Err() != nil:
		return "", false, ctx.Err() // left while its check waited
	case err != nil:
		m.log.Error("boss: authentication backend failed", "err", err)
		return "", false, errBOSSDown
	case expired:
		return "", true, errChallenge
	case c.Digest != nil && !m.replays.First(c.Digest.Nonce, c.Digest.Response, m.now()):
		m.log.Debug("digest response sent again: a fresh nonce is asked for", "user", c.User, "method", method, "client", ip)
		return "", true, errChallenge
	}
	return c.User, false, nil
}

// tokenRefused is the 401 of a subscriber token that does not verify,
// with the reason for the Bearer challenge's error_description. It wraps
// errUnauthorized.
type tokenRefused struct{ reason string }

func (e tokenRefused) Error() string { return "subscriber token refused: " + e.reason }
func (e tokenRefused) Unwrap() error { return errUnauthorized }

// subscriberToken returns the subscriber token a request carries: the
// Bearer credentials of its Authorization header, else, when subscriber
// tokens are accepted, its URL's token query parameter (query: the
// URL's raw query). ok is false when it carries none.
func (m *Manager) subscriberToken(header, query string) (tok string, ok bool) {
	if scheme, cred, _ := strings.Cut(strings.TrimSpace(header), " "); strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(cred), true // "Bearer" alone: an empty token, refused as such
	}
	if m.SubscriberTokens == nil || query == "" {
		return "", false
	}
	// The pairs that parse count: a malformed one elsewhere in the query
	// (players append their own parameters) does not hide the token.
	v, _ := url.ParseQuery(query)
	if !v.Has("token") {
		return "", false
	}
	return v.Get("token"), true
}

// authenticateToken checks subscriber token raw (see
// Manager.SubscriberTokens) presented by the client at ip for title, and
// returns the subscriber it names. Errors: tokenRefused (no token
// accepted here, or it does not verify), errTokenTitle (the token opens
// another title). The entitlement is checked at admission, as for a
// password.
func (m *Manager) authenticateToken(raw, title, ip string) (string, error) {
	if m.SubscriberTokens == nil {
		return "", tokenRefused{"subscriber tokens are not accepted by this front door"}
	}
	c, err := m.SubscriberTokens.Verify(raw, ip, m.now())
	if err != nil {
		reason := strings.TrimPrefix(err.Error(), auth.ErrTokenRefused.Error()+": ")
		lvl := slog.LevelInfo
		if !m.refusalLog.Allow() {
			lvl = slog.LevelDebug // a flood of bad tokens: counted (unauthorized), not each logged
		}
		m.log.Log(context.Background(), lvl, "subscriber token refused", "client", ip, "title", title, "why", reason)
		return "", tokenRefused{reason}
	}
	if c.Title != "" && c.Title != title {
		m.log.Info("subscriber token for another title", "user", c.Subject, "client", ip, "title", title, "token_title", c.Title)
		return "", errTokenTitle
	}
	return c.Subject, nil
}

// tokenSubscriberErr returns err, the error of entitlement or admission
// for the subscriber a token named (sub, from ip), with the errUnauthorized
// of a subscriber the BOSS does not know made the token's refusal: its
// 401 names the token (Bearer invalid_token) rather than asking a player
// that has no password for one.
func (m *Manager) tokenSubscriberErr(err error, sub, ip string) error {
	var tr tokenRefused
	if errors.Is(err, errUnauthorized) && !errors.As(err, &tr) {
		m.log.Info("subscriber token for a subscriber the BOSS does not know", "user", sub, "client", ip)
		return tokenRefused{"the subscriber is not known"}
	}
	return err
}

// sameResource reports whether a Digest uri names the request's URL
// target, as RFC 7616 section 3.4.6 asks (a response computed for
// another URL, captured on the way, is not one for this request). An
// absolute uri (rtsp://host:port/path?query) must have target's scheme,
// host (letter case aside) and port (a default one, 554 for rtsp, 322
// for rtsps, the same as none), path and query; a uri of a path (and
// query) alone, as some players send, is compared with target's path
// and query. A trailing "/" of the path is not compared.
func sameResource(uri string, target *url.URL) bool {
	u, err := url.Parse(uri)
	if err != nil || target == nil {
		return false
	}
	if u.Scheme != "" || u.Host != "" {
		if !strings.EqualFold(u.Scheme, target.Scheme) || !strings.EqualFold(u.Hostname(), target.Hostname()) ||
			portOrDefault(u) != portOrDefault(target) {
			return false
		}
	}
	return strings.TrimSuffix(u.Path, "/") == strings.TrimSuffix(target.Path, "/") && u.RawQuery == target.RawQuery
}

// portOrDefault is u's port, or its scheme's default port when it has
// none ("" for a scheme without one here).
func portOrDefault(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "rtsp":
		return "554"
	case "rtsps":
		return "322"
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}
