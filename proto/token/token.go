// Package token is the admission token the manager signs and every VOD node
// verifies: an HS256 JSON Web Token (RFC 7519) bound to one admission
// session, one title, one node and, optionally, one client address, with an
// expiry. Manager and nodes share the HMAC key (the cluster secret).
package token

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Claims are the fields of an admission token.
type Claims struct {
	Session string `json:"sid"`           // admission session id
	Title   string `json:"tid"`           // title id
	Node    string `json:"nid"`           // node the session was placed on
	Client  string `json:"cip,omitempty"` // client IP the token was issued to; empty: any
	User    string `json:"sub,omitempty"` // subscriber
	Bitrate int64  `json:"bps,omitempty"` // reserved bit/s
	// Proto is the front door the viewer came through: "rtsp", "rtsps" or
	// "http" (the front door's HTTP, plain or HTTPS); empty: any (tokens
	// of managers that did not say). See CheckProto.
	Proto string `json:"pro,omitempty"`
	// Door is the RTSP front door the viewer asked, as its request URL
	// named it: scheme and authority ("rtsp://vod.example.net:554"),
	// checked with ValidDoor; empty: none (HTTP tokens, tokens of managers
	// that did not say). A node sends a viewer whose session already
	// ended there back to it (a 302) rather than refusing its spent token:
	// GStreamer, falling back from UDP to TCP, tears its session down and
	// asks the node's URL again.
	Door string `json:"fd,omitempty"`
	// Readmit marks a re-admission ticket (Signer.Readmit), never an
	// admission token: Parse and Verify refuse it, VerifyReadmit wants it.
	Readmit bool `json:"rdm,omitempty"`
	// Readmitted marks an admission token of a session the front door
	// admitted with a re-admission ticket: no ticket is made from it
	// (Signer.Readmit), so that tickets do not chain past the expiry or
	// change of the credentials first given.
	Readmitted bool `json:"rdmd,omitempty"`
	jwt.RegisteredClaims
}

// ErrNoTicket is Signer.Readmit's refusal to make a ticket from an
// admission token that names no subscriber, or of a session admitted
// with a ticket.
var ErrNoTicket = errors.New("token: no re-admission ticket for this admission")

// ReadmitTTL is how long a re-admission ticket is good for: the player
// follows the node's 302 to the front door at once.
const ReadmitTTL = 30 * time.Second

// maxDoor bounds the length of Claims.Door, bytes: a host name (at most
// 253), a port and the scheme.
const maxDoor = 280

// ValidDoor reports whether door is a front door fit for Claims.Door and
// for a Location header: "rtsp://" or "rtsps://" and an authority of
// host name or address characters (letters, digits, ".-_~:", an IPv6
// literal's brackets, and in it "%25" before a zone, RFC 6874),
// a host before an optional port; no user information, path, query,
// space or control character, at most maxDoor bytes.
func ValidDoor(door string) bool {
	rest, ok := strings.CutPrefix(door, "rtsp://")
	if !ok {
		if rest, ok = strings.CutPrefix(door, "rtsps://"); !ok {
			return false
		}
	}
	if rest == "" || rest[0] == ':' || len(door) > maxDoor {
		return false
	}
	for i := 0; i < len(rest); i++ {
		switch c := rest[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte(".-_~:[]", c) >= 0:
		case c == '%' && strings.HasPrefix(rest[i:], "%25") && strings.LastIndexByte(rest[:i], '[') > strings.LastIndexByte(rest[:i], ']'):
			i += 2 // an IPv6 literal's zone, escaped (RFC 6874)
		default:
			return false
		}
	}
	return true
}

// Errors returned by Verify (wrapped; test with errors.Is).
var (
	ErrInvalid = errors.New("token: invalid")              // malformed or bad signature
	ErrExpired = errors.New("token: expired")              // past its expiry
	ErrScope   = errors.New("token: not for this request") // wrong title, node or client
)

// Signer signs and verifies admission tokens with one HMAC key.
type Signer struct {
	key []byte
}

// NewSigner returns a Signer for key, which must hold at least 16 bytes.
func NewSigner(key []byte) (*Signer, error) {
	if len(key) < 16 {
		return nil, fmt.Errorf("token: key of %d bytes, need at least 16", len(key))
	}
	return &Signer{key: append([]byte(nil), key...)}, nil
}

// Sign returns a token for c valid for ttl from now.
func (s *Signer) Sign(c Claims, now time.Time, ttl time.Duration) (string, error) {
	c.IssuedAt = jwt.NewNumericDate(now)
	c.ExpiresAt = jwt.NewNumericDate(now.Add(ttl))
	return jwt.NewWithClaims(jwt.SigningMethodHS256, &c).SignedString(s.key)
}

// Parse checks the signature of tok and returns its claims without looking
// at the expiry (a node lets an established session go on with its token
// after the token has expired). Errors wrap ErrInvalid.
func (s *Signer) Parse(tok string) (*Claims, error) {
	c, err := s.parse(tok)
	if err == nil && c.Readmit {
		return nil, fmt.Errorf("%w: a re-admission ticket, not an admission token", ErrInvalid)
	}
	return c, err
}

// parse is Parse, re-admission tickets included.
func (s *Signer) parse(tok string) (*Claims, error) {
	var c Claims
	_, err := jwt.ParseWithClaims(tok, &c, func(t *jwt.Token) (any, error) { return s.key, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithoutClaimsValidation())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if c.Session == "" || c.Title == "" {
		return nil, fmt.Errorf("%w: missing sid or tid", ErrInvalid)
	}
	return &c, nil
}

// Readmit signs a re-admission ticket for the viewer of admission token
// c, whose session ended on its node: the front door admits c.User for
// c.Title from c.Client without credentials (VerifyReadmit), once, within
// ReadmitTTL of now. ErrNoTicket for a token that names no subscriber or
// was itself admitted with a ticket (Claims.Readmitted). A node sends it in the Location of the 302 that
// sends such a viewer back to the front door (a player following a
// redirect keeps no credentials given in its URL, nor a subscriber token
// in its query).
func (s *Signer) Readmit(c *Claims, now time.Time) (string, error) {
	if c.Readmitted || c.User == "" {
		return "", ErrNoTicket
	}
	return s.Sign(Claims{Session: c.Session, Title: c.Title, Node: c.Node, Client: c.Client, User: c.User,
		Bitrate: c.Bitrate, Proto: c.Proto, Door: c.Door, Readmit: true}, now, ReadmitTTL)
}

// VerifyReadmit checks re-admission ticket tok (Readmit) for title from
// client at now (ClockSkew allowed) and returns its claims: the
// subscriber is User, the ended admission session Session (the caller
// takes each once). Errors wrap ErrInvalid (malformed, bad signature, an
// admission token, no subscriber), ErrExpired or ErrScope (another
// title or client).
func (s *Signer) VerifyReadmit(tok string, now time.Time, title, client string) (*Claims, error) {
	c, err := s.parse(tok)
	switch {
	case err != nil:
		return nil, err
	case !c.Readmit || c.User == "":
		return nil, fmt.Errorf("%w: not a re-admission ticket", ErrInvalid)
	case c.ExpiresAt == nil || !now.Before(c.ExpiresAt.Add(ClockSkew)):
		return nil, ErrExpired
	}
	if err := c.Check(title, "", client); err != nil {
		return nil, err
	}
	return c, nil
}

// ClockSkew is how long after its expiry a token is still accepted: the
// manager that signs it and the node that checks it have their own clocks
// (NTP keeps them within milliseconds; this covers a node a few seconds
// off). A node remembers a spent token at least this long past its expiry.
const ClockSkew = 5 * time.Second

// Verify parses tok and checks that it is unexpired at now (ClockSkew
// allowed) and was issued
// for title on node to client (an empty node or client argument, or an empty
// client claim, is not checked). Errors wrap ErrInvalid, ErrExpired or
// ErrScope.
func (s *Signer) Verify(tok string, now time.Time, title, node, client string) (*Claims, error) {
	c, err := s.Parse(tok)
	if err != nil {
		return nil, err
	}
	if c.ExpiresAt == nil || !now.Before(c.ExpiresAt.Add(ClockSkew)) {
		return c, ErrExpired
	}
	if err := c.Check(title, node, client); err != nil {
		return c, err
	}
	return c, nil
}

// CheckProto reports whether c may start a session over proto ("rtsp",
// "rtsps" or "http"): the protocol it was issued for, or RTSPS for an
// RTSP token (the same viewer over TLS); any when c names none. The error
// wraps ErrScope: a token issued behind the RTSPS or HTTPS front door is
// not good on a node's plain RTSP port (its media would travel in clear),
// nor an HTTP token over RTSP or the other way round (the session would be
// recorded under the wrong protocol).
func (c *Claims) CheckProto(proto string) error {
	if c.Proto == "" || c.Proto == proto || (c.Proto == "rtsp" && proto == "rtsps") {
		return nil
	}
	return fmt.Errorf("%w: token for %s, request over %s", ErrScope, c.Proto, proto)
}

// Check reports whether c was issued for title on node to client, with the
// same rules as Verify. The error wraps ErrScope.
func (c *Claims) Check(title, node, client string) error {
	switch {
	case c.Title != title:
		return fmt.Errorf("%w: token for title %q, request for %q", ErrScope, c.Title, title)
	case node != "" && c.Node != node:
		return fmt.Errorf("%w: token for node %q", ErrScope, c.Node)
	case client != "" && c.Client != "" && c.Client != client:
		return fmt.Errorf("%w: token for client %s, request from %s", ErrScope, c.Client, client)
	}
	return nil
}
