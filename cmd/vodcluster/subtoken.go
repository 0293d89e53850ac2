package main

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/spf13/cobra"

	"vodcluster/acm/auth"
	"vodcluster/cdp"
	"vodcluster/cmd/internal/durflag"
	"vodcluster/cmd/internal/fileflag"
)

// tokenRequest is what subscriber-token signs: the claims of
// auth.SubscriberClaims and the key.
type tokenRequest struct {
	User, Title, IP, Issuer, Audience string
	TTL                               time.Duration
	TTLText                           string // --ttl as typed, for errors; empty: TTL's own form
	SecretFile, KeyFile, Alg          string
}

func subscriberTokenCmd() *cobra.Command {
	var r tokenRequest
	ttl := durflag.Value{D: time.Hour}
	cmd := &cobra.Command{
		Use:   "subscriber-token",
		Short: "Sign a subscriber token (JWT) as an operator's portal would, to try manager.subscriber_tokens",
		Long: "subscriber-token prints a JSON Web Token for a subscriber, signed with the portal's key:\n" +
			"the HMAC secret the manager's subscriber_tokens.secret_file holds (HS256), or the private\n" +
			"key whose public key its key_file holds (RS256, ES256/384/512 by curve, EdDSA). A player\n" +
			"presents it as ?token=... in the title's URL or as \"Authorization: Bearer ...\". The\n" +
			"operator's portal signs its own tokens; this is for trying a configuration.",
		Example: "  vodcluster subscriber-token --secret-file /etc/vodcluster/portal-secret --user alice --ttl 4h\n" +
			"  ffplay \"http://front:8080/vod/sample-004/index.m3u8?token=$(vodcluster subscriber-token --secret-file portal-secret --user alice)\"",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r.TTL, r.TTLText = ttl.D, ttl.String()
			tok, err := signSubscriberToken(r, time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&r.User, "user", "", "the subscriber (sub): a name the manager's users file knows")
	f.StringVar(&r.Title, "title", "", "the only title the token opens (title claim); empty: any the subscriber is entitled to")
	f.StringVar(&r.IP, "ip", "", "the only client address the token is good from (ip claim); empty: any")
	f.Var(&ttl, "ttl", "how long the token is good (exp; e.g. 30m, 4h, 7d)")
	f.StringVar(&r.Issuer, "issuer", "", "iss, when the manager's subscriber_tokens.issuer is set")
	f.StringVar(&r.Audience, "audience", "", "aud, when the manager's subscriber_tokens.audience is set")
	f.StringVar(&r.SecretFile, "secret-file", "", "HMAC secret shared with the manager (its subscriber_tokens.secret_file)")
	f.StringVar(&r.KeyFile, "key-file", "", "PEM private key (PKCS #8, PKCS #1 RSA or SEC 1 EC) whose public key the manager's key_file holds")
	f.StringVar(&r.Alg, "alg", "", "signing algorithm (default: HS256, RS256, ES256/384/512 by curve or EdDSA, from the key)")
	_ = cmd.MarkFlagRequired("user")
	return cmd
}

// signSubscriberToken signs r's claims at now. Errors: no user, a ttl
// that is not positive, a title that is no title id (cdp.ValidID), an ip
// that is not an address, neither or both
// key files, a secret shorter than auth.MinTokenSecret, a key that cannot
// be read or used with the algorithm.
func signSubscriberToken(r tokenRequest, now time.Time) (string, error) {
	switch {
	case r.User == "":
		return "", errors.New("--user is required")
	case r.TTL <= 0:
		text := r.TTLText
		if text == "" {
			text = durflag.Readable(r.TTL)
		}
		return "", fmt.Errorf("--ttl %s: want a positive duration", text)
	case (r.SecretFile == "") == (r.KeyFile == ""):
		return "", errors.New("give --secret-file (HMAC) or --key-file (private key), one of the two")
	}
	if r.Title != "" {
		if err := cdp.ValidID(r.Title); err != nil {
			return "", fmt.Errorf("--title: %w (a title id of the catalog)", err)
		}
	}
	if r.IP != "" {
		if _, err := netip.ParseAddr(r.IP); err != nil {
			return "", fmt.Errorf("--ip %q: not an IP address", r.IP)
		}
	}
	var key any
	alg := r.Alg
	if r.SecretFile != "" {
		b, err := readTokenSecret(r.SecretFile)
		if err != nil {
			return "", fileflag.Error("secret-file", r.SecretFile, err)
		}
		if len(b) < auth.MinTokenSecret {
			// The manager refuses such a secret: a token signed with it
			// would verify nowhere.
			return "", fmt.Errorf("--secret-file %s: %d bytes, want at least %d", r.SecretFile, len(b), auth.MinTokenSecret)
		}
		key = b
		if alg == "" {
			alg = "HS256"
		}
	} else {
		var err error
		if key, err = readPrivateKey(r.KeyFile); err != nil {
			return "", fileflag.Error("key-file", r.KeyFile, err)
		}
		if alg == "" {
			alg = defaultAlg(key)
		}
	}
	m := jwt.GetSigningMethod(alg)
	if m == nil || alg == "none" {
		return "", fmt.Errorf("--alg %q: not a signing algorithm", alg)
	}
	c := auth.SubscriberClaims{Title: r.Title, IP: r.IP, RegisteredClaims: jwt.RegisteredClaims{
		Subject: r.User, Issuer: r.Issuer, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(r.TTL))}}
	if r.Audience != "" {
		c.Audience = jwt.ClaimStrings{r.Audience}
	}
	tok, err := jwt.NewWithClaims(m, c).SignedString(key)
	if err != nil {
		fit := defaultAlg(key)
		if _, secret := key.([]byte); secret {
			fit = "HS256, HS384 or HS512"
		}
		if fit != "" && fit != alg {
			return "", fmt.Errorf("--alg %s does not fit the key given: it signs with %s (%v)", alg, fit, err)
		}
		return "", fmt.Errorf("sign with %s: %w", alg, err)
	}
	return tok, nil
}

// readTokenSecret reads a subscriber-token HMAC secret: the file's bytes
// as they are, a final newline dropped.
func readTokenSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return bytes.TrimRight(b, "\r\n"), nil
}

// readPrivateKey reads the first PEM private key of path. Errors: none
// found, or one that is not an RSA, ECDSA or Ed25519 key.
func readPrivateKey(path string) (any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for {
		var blk *pem.Block
		if blk, b = pem.Decode(b); blk == nil {
			return nil, fmt.Errorf("%s: no PEM private key (PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)", path)
		}
		var k any
		switch blk.Type {
		case "PRIVATE KEY":
			k, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
		case "RSA PRIVATE KEY":
			k, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
		case "EC PRIVATE KEY":
			k, err = x509.ParseECPrivateKey(blk.Bytes)
		default:
			continue // EC PARAMETERS and the like
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		switch k.(type) {
		case *rsa.PrivateKey, *ecdsa.PrivateKey, ed25519.PrivateKey:
			return k, nil
		case *ecdh.PrivateKey:
			return nil, fmt.Errorf("%s: an X25519 or ECDH key, want RSA, ECDSA or Ed25519 (a signing key)", path)
		}
		return nil, fmt.Errorf("%s: a %T key, want RSA, ECDSA or Ed25519", path, k)
	}
}

// defaultAlg names the JWS algorithm for a private key.
func defaultAlg(k any) string {
	switch k := k.(type) {
	case *rsa.PrivateKey:
		return "RS256"
	case *ecdsa.PrivateKey:
		switch k.Curve.Params().BitSize {
		case 384:
			return "ES384"
		case 521:
			return "ES512"
		}
		return "ES256"
	case ed25519.PrivateKey:
		return "EdDSA"
	}
	return ""
}
