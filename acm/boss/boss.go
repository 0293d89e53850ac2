package boss

import (
	"context"
	"crypto/md5"
	"crypto/subtle"
	"encoding/hex"
	"errors"
)

// Errors of Authenticate and Entitled (wrapped; test with errors.Is).
var (
	// ErrUnauthorized: unknown user, wrong password or wrong Digest
	// response. The front door answers 401.
	ErrUnauthorized = errors.New("boss: unauthorized")
	// ErrUnknownUser: Entitled was asked about a user the backend does
	// not know.
	ErrUnknownUser = errors.New("boss: unknown user")
)

// BOSS authenticates subscribers and tells their entitlements. Backends
// must be safe for concurrent use. Errors other than ErrUnauthorized and
// ErrUnknownUser mean the backend itself failed (the front door answers
// 503 Service Unavailable).
type BOSS interface {
	// Authenticate checks c. It returns nil when the subscriber is who
	// they claim, an error wrapping ErrUnauthorized when not.
	Authenticate(ctx context.Context, c Credentials) error
	// Entitled reports whether user holds the entitlement package pkg.
	// It fails with ErrUnknownUser for a user it does not know.
	Entitled(ctx context.Context, user, pkg string) (bool, error)
}

// Credentials are what a client presented: exactly one of Password (HTTP
// or RTSP Basic) and Digest is set.
type Credentials struct {
	User     string
	Password string          // Basic: the password in clear, as the client sent it
	Digest   *DigestResponse // Digest: the client's response to a challenge
}

// DigestResponse is the content of an `Authorization: Digest ...` header
// (RFC 2617 section 3.2.2, RFC 7616 section 3.4) plus the request method
// it was computed for. Only algorithm MD5 is supported; QOP is "" (RFC
// 2069 compatibility, as live555/VLC and GStreamer send it) or "auth".
type DigestResponse struct {
	Username  string
	Realm     string
	Nonce     string
	URI       string // the digest-uri the client hashed
	Response  string // 32 lower-case hex digits
	Algorithm string // "" or "MD5"
	QOP       string // "" or "auth"
	NC        string // nonce count, 8 hex digits, with qop=auth
	CNonce    string // client nonce, with qop=auth
	Opaque    string
	Method    string // request method (DESCRIBE, GET, ...), filled by the server
}

// HA1 returns the Digest HA1 = MD5(user:realm:password) as 32 lower-case
// hex digits (RFC 2617 section 3.2.2.2, algorithm MD5).
func HA1(user, realm, password string) string {
	return md5hex(user + ":" + realm + ":" + password)
}

// Expected returns the response a client knowing ha1 must send for d
// (RFC 2617 section 3.2.2.1): MD5(HA1:nonce:HA2) without qop and
// MD5(HA1:nonce:nc:cnonce:qop:HA2) with qop=auth, where
// HA2 = MD5(method:uri).
func (d *DigestResponse) Expected(ha1 string) string {
	ha2 := md5hex(d.Method + ":" + d.URI)
	if d.QOP == "" {
		return md5hex(ha1 + ":" + d.Nonce + ":" + ha2)
	}
	return md5hex(ha1 + ":" + d.Nonce + ":" + d.NC + ":" + d.CNonce + ":" + d.QOP + ":" + ha2)
}

// Verify reports, in constant time over the response, whether d is the
// right response for ha1.
func (d *DigestResponse) Verify(ha1 string) bool {
	return subtle.ConstantTimeCompare([]byte(d.Expected(ha1)), []byte(d.Response)) == 1
}

func md5hex(s string) string {
	h := md5.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}
