package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func pemPublic(t *testing.T, k any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func sign(t *testing.T, m jwt.SigningMethod, key any, c SubscriberClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(m, c).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// claims returns valid claims for demo at t0, good for an hour.
func claims() SubscriberClaims {
	return SubscriberClaims{RegisteredClaims: jwt.RegisteredClaims{
		Subject: "demo", IssuedAt: jwt.NewNumericDate(t0), ExpiresAt: jwt.NewNumericDate(t0.Add(time.Hour))}}
}

func TestSubscriberTokensOfEachKeyKind(t *testing.T) {
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	epub, edk, _ := ed25519.GenerateKey(rand.Reader)
	// One file with the three keys (a rotation in progress, say).
	pems := append(append(pemPublic(t, &rk.PublicKey), pemPublic(t, &ek.PublicKey)...), pemPublic(t, epub)...)
	v, err := NewSubscriberTokens(SubscriberTokenConfig{PublicKeysPEM: pems})
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{
		"RS256": sign(t, jwt.SigningMethodRS256, rk, claims()),
		"PS384": sign(t, jwt.SigningMethodPS384, rk, claims()),
		"ES256": sign(t, jwt.SigningMethodES256, ek, claims()),
		"EdDSA": sign(t, jwt.SigningMethodEdDSA, edk, claims()),
	} {
		c, err := v.Verify(tok, "192.0.2.1", t0.Add(time.Minute))
		if err != nil || c.Subject != "demo" {
			t.Errorf("%s: %+v %v", name, c, err)
		}
	}
	// A token signed by a key not in the file is refused for its
	// signature, not for the type of the other keys tried.
	stranger, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, err = v.Verify(sign(t, jwt.SigningMethodES256, stranger, claims()), "192.0.2.1", t0)
	if !errors.Is(err, ErrTokenRefused) || !strings.Contains(err.Error(), "signature is invalid") || strings.Contains(err.Error(), "type") {
		t.Errorf("a stranger's ES256 token: %v, want a refusal naming the signature", err)
	}
	secret := []byte(strings.Repeat("k", 32))
	h, err := NewSubscriberTokens(SubscriberTokenConfig{HMACSecret: secret, Issuer: "portal", Audience: "vod"})
	if err != nil {
		t.Fatal(err)
	}
	c := claims()
	c.Issuer, c.Audience, c.Title = "portal", jwt.ClaimStrings{"epg", "vod"}, "sample-001"
	got, err := h.Verify(sign(t, jwt.SigningMethodHS256, secret, c), "192.0.2.1", t0)
	if err != nil || got.Title != "sample-001" {
		t.Fatalf("HS256: %+v %v", got, err)
	}
}

func TestSubscriberTokensRefused(t *testing.T) {
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	pub := pemPublic(t, &rk.PublicKey)
	v, err := NewSubscriberTokens(SubscriberTokenConfig{PublicKeysPEM: pub, Issuer: "portal", Audience: "vod"})
	if err != nil {
		t.Fatal(err)
	}
	good := func() SubscriberClaims {
		c := claims()
		c.Issuer, c.Audience = "portal", jwt.ClaimStrings{"vod"}
		return c
	}
	with := func(f func(*SubscriberClaims)) SubscriberClaims { c := good(); f(&c); return c }
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, good()).SignedString(jwt.UnsafeAllowNoneSignatureType)
	critical := jwt.NewWithClaims(jwt.SigningMethodRS256, good())
	critical.Header["crit"], critical.Header["x-portal-bind"] = []string{"x-portal-bind"}, "device"
	crit, err := critical.SignedString(rk)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"expired":                             sign(t, jwt.SigningMethodRS256, rk, with(func(c *SubscriberClaims) { c.ExpiresAt = jwt.NewNumericDate(t0.Add(-time.Minute)) })),
		"no exp":                              sign(t, jwt.SigningMethodRS256, rk, with(func(c *SubscriberClaims) { c.ExpiresAt = nil })),
		"not yet valid":                       sign(t, jwt.SigningMethodRS256, rk, with(func(c *SubscriberClaims) { c.NotBefore = jwt.NewNumericDate(t0.Add(time.Hour)) })),
		"no sub":                              sign(t, jwt.SigningMethodRS256, rk, with(func(c *SubscriberClaims) { c.Subject = "" })),
		"other issuer":                        sign(t, jwt.SigningMethodRS256, rk, with(func(c *SubscriberClaims) { c.Issuer = "elsewhere" })),
		"other audience":                      sign(t, jwt.SigningMethodRS256, rk, with(func(c *SubscriberClaims) { c.Audience = jwt.ClaimStrings{"web"} })),
		"other address":                       sign(t, jwt.SigningMethodRS256, rk, with(func(c *SubscriberClaims) { c.IP = "192.0.2.99" })),
		"other key":                           sign(t, jwt.SigningMethodRS256, other, good()),
		"alg none":                            none,
		"a crit header (RFC 7515 §4.1.11)":    crit,
		"HS256 with the public key as secret": sign(t, jwt.SigningMethodHS256, pub, good()), // algorithm confusion
		"garbage":                             "not.a.jwt",
		"empty":                               "",
	}
	for name, tok := range cases {
		if c, err := v.Verify(tok, "192.0.2.1", t0.Add(time.Minute)); !errors.Is(err, ErrTokenRefused) {
			t.Errorf("%s: accepted (%+v) or wrong error %v", name, c, err)
		}
	}
	// Bound to an address: the IPv4-mapped form of it is the same.
	bound := sign(t, jwt.SigningMethodRS256, rk, with(func(c *SubscriberClaims) { c.IP = "192.0.2.1" }))
	for _, ip := range []string{"192.0.2.1", "::ffff:192.0.2.1"} {
		if _, err := v.Verify(bound, ip, t0); err != nil {
			t.Errorf("bound token from %s: %v", ip, err)
		}
	}
	// Within the leeway, an expired token still passes.
	if _, err := v.Verify(sign(t, jwt.SigningMethodRS256, rk, good()), "192.0.2.1", t0.Add(time.Hour+10*time.Second)); err != nil {
		t.Errorf("10 s past exp (leeway 30 s): %v", err)
	}
}

func TestSubscriberTokenConfigErrors(t *testing.T) {
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	priv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rk)})
	for name, c := range map[string]SubscriberTokenConfig{
		"neither":          {},
		"both":             {PublicKeysPEM: pemPublic(t, &rk.PublicKey), HMACSecret: []byte(strings.Repeat("k", 32))},
		"short secret":     {HMACSecret: []byte("short")},
		"no PEM":           {PublicKeysPEM: []byte("hello")},
		"a private key":    {PublicKeysPEM: priv},
		"negative leeway":  {HMACSecret: []byte(strings.Repeat("k", 32)), Leeway: -time.Second},
		"huge leeway":      {HMACSecret: []byte(strings.Repeat("k", 32)), Leeway: 100 * time.Hour},
		"broken PEM block": {PublicKeysPEM: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte("x")})},
	} {
		if _, err := NewSubscriberTokens(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func BenchmarkSubscriberTokenVerifyES256(b *testing.B) {
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(&ek.PublicKey)
	v, err := NewSubscriberTokens(SubscriberTokenConfig{PublicKeysPEM: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})})
	if err != nil {
		b.Fatal(err)
	}
	c := claims()
	tok, _ := jwt.NewWithClaims(jwt.SigningMethodES256, c).SignedString(ek)
	b.ResetTimer()
	for range b.N {
		if _, err := v.Verify(tok, "192.0.2.1", t0); err != nil {
			b.Fatal(err)
		}
	}
}

// The leeway's error quotes the durations as the configuration writes
// them ("5m"), not in Go's form ("5m0s").
func TestSubscriberTokenLeewayErrorWritten(t *testing.T) {
	_, err := NewSubscriberTokens(SubscriberTokenConfig{HMACSecret: []byte(strings.Repeat("k", 32)), Leeway: time.Hour})
	if err == nil || err.Error() != "subscriber tokens: leeway 1h: want 0 (the default, 30s) up to 5m" {
		t.Fatalf("leeway 1h: %v", err)
	}
}
