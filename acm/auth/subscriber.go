package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"vodcluster/proto/durtext"
)

// ErrTokenRefused is the error of SubscriberTokens.Verify for a token that
// does not verify (wrapped with the reason; test with errors.Is).
var ErrTokenRefused = errors.New("subscriber token refused")

// DefaultTokenLeeway is the clock skew allowed on a subscriber token's
// exp, nbf and iat when SubscriberTokenConfig.Leeway is 0.
const DefaultTokenLeeway = 30 * time.Second

// MaxTokenLeeway is the largest leeway NewSubscriberTokens takes: more is
// not clock skew, it lengthens every token.
const MaxTokenLeeway = 5 * time.Minute

// MinTokenSecret is the shortest HMAC secret a SubscriberTokens accepts,
// in bytes (RFC 7518 section 3.2: at least the hash's output, 256 bits
// for HS256).
const MinTokenSecret = 32

// SubscriberClaims are the claims of a subscriber token: the registered
// claims of RFC 7519 section 4.1 (sub, the subscriber's name at the BOSS,
// and exp are required) and two of the operator's own, both optional.
type SubscriberClaims struct {
	jwt.RegisteredClaims
	// Title, when set, is the only title the token opens (a title id).
	Title string `json:"title,omitempty"`
	// IP, when set, is the only client address the token is good from
	// (IPv4 or IPv6, as the front door sees the client).
	IP string `json:"ip,omitempty"`
}

// SubscriberTokenConfig says which subscriber tokens a SubscriberTokens
// accepts. Exactly one of PublicKeysPEM and HMACSecret is set.
type SubscriberTokenConfig struct {
	// PublicKeysPEM holds one or more PEM blocks: PUBLIC KEY (PKIX: RSA,
	// ECDSA or Ed25519), RSA PUBLIC KEY (PKCS #1) or CERTIFICATE (its
	// key). A token verifies against any of them (several while the
	// portal's key is rotated). Algorithms: RS256/384/512 and
	// PS256/384/512 for RSA, ES256/384/512 for ECDSA, EdDSA for Ed25519.
	PublicKeysPEM []byte
	// HMACSecret is a key shared with the portal (HS256/384/512), at
	// least 32 bytes.
	HMACSecret []byte
	// Issuer, when set, is the iss a token must carry.
	Issuer string
	// Audience, when set, must be among a token's aud.
	Audience string
	// Leeway is the clock skew allowed on exp, nbf and iat
	// (DefaultTokenLeeway when 0).
	Leeway time.Duration
}

// SubscriberTokens verifies subscriber tokens: JSON Web Tokens (RFC 7519)
// that the operator's portal (the middleware a set-top box logs in to)
// signs for a subscriber and hands to the player in the title's URL
// (?token=...) or as "Authorization: Bearer" (RFC 6750), so that the
// player needs no password. The front door takes the subscriber from sub
// and checks the entitlement with the BOSS as for a password. A token is
// good until its exp, as often as it is presented (a bearer credential:
// keep exp short, or bind it to a title or a client address). Safe for
// concurrent use.
type SubscriberTokens struct {
	keys    map[string]jwt.VerificationKeySet // by alg: the keys of its kind
	methods []string
	parser  func(now time.Time) *jwt.Parser
}

// NewSubscriberTokens returns a verifier for c. Errors: neither or both of
// PublicKeysPEM and HMACSecret, a PEM block that holds no supported
// public key, an HMAC secret shorter than 32 bytes, a negative leeway.
func NewSubscriberTokens(c SubscriberTokenConfig) (*SubscriberTokens, error) {
	if (len(c.PublicKeysPEM) == 0) == (len(c.HMACSecret) == 0) {
		return nil, errors.New("subscriber tokens: want public keys or an HMAC secret, one of the two")
	}
	if c.Leeway < 0 || c.Leeway > MaxTokenLeeway {
		return nil, fmt.Errorf("subscriber tokens: leeway %s: want 0 (the default, %s) up to %s", durtext.Written(c.Leeway), durtext.Written(DefaultTokenLeeway), durtext.Written(MaxTokenLeeway))
	}
	if c.Leeway == 0 {
		c.Leeway = DefaultTokenLeeway
	}
	v := &SubscriberTokens{keys: make(map[string]jwt.VerificationKeySet)}
	if len(c.HMACSecret) > 0 {
		if len(c.HMACSecret) < MinTokenSecret {
			return nil, fmt.Errorf("subscriber tokens: HMAC secret of %d bytes, want at least %d", len(c.HMACSecret), MinTokenSecret)
		}
		v.methods = []string{"HS256", "HS384", "HS512"}
		for _, m := range v.methods {
			v.keys[m] = jwt.VerificationKeySet{Keys: []jwt.VerificationKey{c.HMACSecret}}
		}
	} else {
		keys, err := parsePublicKeys(c.PublicKeysPEM)
		if err != nil {
			return nil, fmt.Errorf("subscriber tokens: %w", err)
		}
		for _, k := range keys {
			var ms []string
			switch k.(type) {
			case *rsa.PublicKey:
				ms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
			case *ecdsa.PublicKey:
				ms = []string{"ES256", "ES384", "ES512"}
			case ed25519.PublicKey:
				ms = []string{"EdDSA"}
			}
			for _, m := range ms {
				if !slices.Contains(v.methods, m) {
					v.methods = append(v.methods, m)
				}
				// Only the keys of a token's kind are tried: its refusal
				// then names the signature, not another kind of key.
				v.keys[m] = jwt.VerificationKeySet{Keys: append(v.keys[m].Keys, k)}
			}
		}
	}
	opts := []jwt.ParserOption{jwt.WithValidMethods(v.methods), jwt.WithExpirationRequired(),
		jwt.WithLeeway(c.Leeway), jwt.WithIssuedAt()}
	if c.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(c.Issuer))
	}
	if c.Audience != "" {
		opts = append(opts, jwt.WithAudience(c.Audience))
	}
	v.parser = func(now time.Time) *jwt.Parser {
		return jwt.NewParser(append(opts, jwt.WithTimeFunc(func() time.Time { return now }))...)
	}
	return v, nil
}

// parsePublicKeys reads every PEM block of b as a public key.
func parsePublicKeys(b []byte) ([]any, error) {
	var keys []any
	for n := 1; ; n++ {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		var k any
		var err error
		switch blk.Type {
		case "PUBLIC KEY":
			k, err = x509.ParsePKIXPublicKey(blk.Bytes)
		case "RSA PUBLIC KEY":
			k, err = x509.ParsePKCS1PublicKey(blk.Bytes)
		case "CERTIFICATE":
			var cert *x509.Certificate
			if cert, err = x509.ParseCertificate(blk.Bytes); err == nil {
				k = cert.PublicKey
			}
		default:
			err = fmt.Errorf("type %q, want PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE", blk.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("PEM block %d: %w", n, err)
		}
		switch k.(type) {
		case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		default:
			return nil, fmt.Errorf("PEM block %d: a %T key, want RSA, ECDSA or Ed25519", n, k)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("no PEM public key found")
	}
	return keys, nil
}

// Verify checks raw (the compact JWS form) at now for a request from
// clientIP and returns its claims. Errors: ErrTokenRefused wrapped with
// the reason: malformed, signed with another key or an algorithm not
// allowed, a crit header (no extension is understood), expired or not
// yet valid, another issuer or audience, no sub, or an ip claim that is
// not clientIP.
func (v *SubscriberTokens) Verify(raw, clientIP string, now time.Time) (*SubscriberClaims, error) {
	var c SubscriberClaims
	_, err := v.parser(now).ParseWithClaims(raw, &c, func(t *jwt.Token) (any, error) {
		if _, ok := t.Header["crit"]; ok {
			// Extensions the token says must be understood: none is
			// here, so it is refused (RFC 7515 §4.1.11).
			return nil, errors.New("crit header: extensions not understood")
		}
		ks, ok := v.keys[t.Method.Alg()]
		if !ok { // not reached: the parser allows only the methods of v.keys
			return nil, fmt.Errorf("no key for %s", t.Method.Alg())
		}
		return ks, nil
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrTokenRefused, err)
	case c.Subject == "":
		return nil, fmt.Errorf("%w: no sub (subscriber)", ErrTokenRefused)
	case c.IP != "" && !sameAddr(c.IP, clientIP):
		return nil, fmt.Errorf("%w: bound to another client address", ErrTokenRefused)
	}
	return &c, nil
}

// sameAddr reports whether a and b are the same IP address (an IPv4
// address and its IPv6-mapped form are the same).
func sameAddr(a, b string) bool {
	x, err1 := netip.ParseAddr(a)
	y, err2 := netip.ParseAddr(b)
	return err1 == nil && err2 == nil && x.Unmap() == y.Unmap()
}
