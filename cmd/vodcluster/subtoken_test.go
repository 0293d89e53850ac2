package main

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func runSubscriberToken(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := subscriberTokenCmd()
	cmd.SetArgs(args)
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	err := cmd.Execute()
	return strings.TrimSpace(out.String()), err
}

// writePEM writes a PEM block of typ holding der to dir/name.
func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSubscriberTokenCommand: what `vodcluster subscriber-token` signs,
// with a shared secret or a private key, the manager's subscriber_tokens
// section (secret_file or key_file) verifies, claims and all; bad flags and
// keys are refused with the flag or file named.
func TestSubscriberTokenCommand(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "portal-secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("s", 40)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ek, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	der8, _ := x509.MarshalPKCS8PrivateKey(ek)
	derPub, _ := x509.MarshalPKIXPublicKey(&ek.PublicKey)
	ecPriv := writePEM(t, dir, "portal.key", "PRIVATE KEY", der8)
	ecPub := writePEM(t, dir, "portal.pub", "PUBLIC KEY", derPub)
	edPub, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	derEd8, _ := x509.MarshalPKCS8PrivateKey(edPriv)
	derEdPub, _ := x509.MarshalPKIXPublicKey(edPub)
	edKey := writePEM(t, dir, "ed.key", "PRIVATE KEY", derEd8)
	edPubFile := writePEM(t, dir, "ed.pub", "PUBLIC KEY", derEdPub)
	xk, _ := ecdh.X25519().GenerateKey(rand.Reader)
	derX8, _ := x509.MarshalPKCS8PrivateKey(xk)
	xKey := writePEM(t, dir, "x25519.key", "PRIVATE KEY", derX8)
	empty := filepath.Join(dir, "empty.pem")
	os.WriteFile(empty, nil, 0o600)
	if _, err := (SubscriberTokensConfig{KeyFile: empty}).subscriberTokens(); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("empty key_file: %v", err)
	}
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("abc\n"), 0o600)

	for _, tc := range []struct {
		name string
		cfg  SubscriberTokensConfig
		args []string
		alg  string
	}{
		{"secret", SubscriberTokensConfig{SecretFile: secret, Issuer: "portal", Audience: "vod"}, []string{"--secret-file", secret, "--issuer", "portal", "--audience", "vod"}, "HS256"},
		{"ECDSA P-384", SubscriberTokensConfig{KeyFile: ecPub}, []string{"--key-file", ecPriv}, "ES384"},
		{"Ed25519", SubscriberTokensConfig{KeyFile: edPubFile}, []string{"--key-file", edKey}, "EdDSA"},
	} {
		tok, err := runSubscriberToken(t, append([]string{"--user", "alice", "--title", "sample-003", "--ip", "192.0.2.5", "--ttl", "10m"}, tc.args...)...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !strings.Contains(decodeHeader(t, tok), `"alg":"`+tc.alg+`"`) {
			t.Errorf("%s: header %s, want alg %s", tc.name, decodeHeader(t, tok), tc.alg)
		}
		v, err := tc.cfg.subscriberTokens()
		if err != nil {
			t.Fatalf("%s: config: %v", tc.name, err)
		}
		c, err := v.Verify(tok, "192.0.2.5", time.Now())
		if err != nil || c.Subject != "alice" || c.Title != "sample-003" || c.IP != "192.0.2.5" ||
			time.Until(c.ExpiresAt.Time) > 10*time.Minute || time.Until(c.ExpiresAt.Time) < 9*time.Minute {
			t.Fatalf("%s: %+v %v", tc.name, c, err)
		}
		if _, err := v.Verify(tok, "192.0.2.6", time.Now()); err == nil {
			t.Fatalf("%s: a token bound to 192.0.2.5 accepted from 192.0.2.6", tc.name)
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--secret-file", secret}, `"user" not set`},
		{[]string{"--user", "a"}, "--secret-file"},
		{[]string{"--user", "a", "--secret-file", secret, "--key-file", ecPriv}, "one of the two"},
		{[]string{"--user", "a", "--secret-file", secret, "--ttl", "0s"}, "--ttl"},
		// Echoed as typed: it was "--ttl -1h30m0s".
		{[]string{"--user", "a", "--secret-file", secret, "--ttl", "-90m"}, "--ttl -90m: want a positive duration"},
		{[]string{"--user", "a", "--secret-file", secret, "--ip", "box-7"}, "--ip"},
		{[]string{"--user", "a", "--secret-file", secret, "--title", "sample 003/index.m3u8"}, "--title"},
		{[]string{"--user", "a", "--secret-file", secret, "--alg", "none"}, "--alg"},
		{[]string{"--user", "a", "--key-file", ecPub}, "no PEM private key"},
		{[]string{"--user", "a", "--key-file", ecPriv, "--alg", "RS256"}, "RS256"},
		{[]string{"--user", "a", "--key-file", ecPriv, "--alg", "ES256"}, "it signs with ES384"}, // a P-384 key
		{[]string{"--user", "a", "--secret-file", secret, "--alg", "RS256"}, "it signs with HS256"},
		{[]string{"--user", "a", "--secret-file", short}, "at least 32"},
		{[]string{"--user", "a", "--secret-file", os.DevNull}, "at least 32"},
		{[]string{"--user", "a", "--key-file", xKey}, "X25519"},
	} {
		if _, err := runSubscriberToken(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}

	// The manager's section: a key_file holding a private key, a short
	// secret, both files, a negative leeway are refused at start.
	if _, err := (SubscriberTokensConfig{KeyFile: ecPriv}).subscriberTokens(); err == nil || !strings.Contains(err.Error(), "portal.key") {
		t.Errorf("key_file with a private key: %v", err)
	}
	if _, err := (SubscriberTokensConfig{SecretFile: short}).subscriberTokens(); err == nil || !strings.Contains(err.Error(), "32") {
		t.Errorf("short secret: %v", err)
	}
	for _, c := range []ManagerConfig{
		{SubscriberTokens: SubscriberTokensConfig{KeyFile: ecPub, SecretFile: secret}},
		{SubscriberTokens: SubscriberTokensConfig{SecretFile: secret, Leeway: -time.Second}},
		// An issuer with no key: tokens would be off without a word.
		{SubscriberTokens: SubscriberTokensConfig{Issuer: "portal"}},
		{SubscriberTokens: SubscriberTokensConfig{Audience: "vod", Leeway: time.Minute}},
	} {
		if err := c.validate(); err == nil || !strings.Contains(err.Error(), "subscriber_tokens") {
			t.Errorf("%+v: %v", c.SubscriberTokens, err)
		}
	}
}

// decodeHeader returns a JWT's decoded JOSE header.
func decodeHeader(t *testing.T, tok string) string {
	t.Helper()
	h, _, _ := strings.Cut(tok, ".")
	b, err := base64URL(h)
	if err != nil {
		t.Fatalf("token %q: %v", tok, err)
	}
	return string(b)
}

// TestSubscriberTokensThroughFrontDoor: players given a title URL with a
// portal's token and no password play it through the front door: ffmpeg
// over HLS, over RTSP, and over progressive HTTP with the token as
// "Authorization: Bearer"; a token for another title is 403, an expired
// one 401.
func TestSubscriberTokensThroughFrontDoor(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "portal-secret")
	c := startTestCluster(t, 1, 100_000_000, func(o *clusterOptions) { o.PortalSecretFile = secret })
	sign := func(title string, ttl time.Duration) string {
		tok, err := signSubscriberToken(tokenRequest{User: "demo", Title: title, TTL: ttl, SecretFile: secret}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	http, rtsp := c.manager.HTTPAddr(), c.manager.RTSPAddr()
	if p := runFFmpegInput(t, fmt.Sprintf("http://%s/vod/sample-004/index.m3u8?token=%s", http, sign("", time.Hour)), 4); p.Err != nil || p.Frames < 95 {
		t.Fatalf("HLS with a token: %v, %d frames\n%s", p.Err, p.Frames, p.Out)
	}
	if p := runFFmpeg(t, fmt.Sprintf("rtsp://%s/vod/sample-005?token=%s", rtsp, sign("sample-005", time.Hour)), "tcp", 4); p.Err != nil || p.Frames < 95 {
		t.Fatalf("RTSP with a token: %v, %d frames\n%s", p.Err, p.Frames, p.Out)
	}
	if p := ffmpegRun(t, 4, "-headers", "Authorization: Bearer "+sign("", time.Hour), "-i", fmt.Sprintf("http://%s/vod/sample-006.ts", http)); p.Err != nil || p.Frames < 95 {
		t.Fatalf("HTTP with a Bearer token: %v, %d frames\n%s", p.Err, p.Frames, p.Out)
	}
	if out, _ := rtspStatus(t, fmt.Sprintf("rtsp://%s/vod/sample-007?token=%s", rtsp, sign("sample-005", time.Hour))); !strings.Contains(out, "403") {
		t.Fatalf("a token for another title:\n%s", out)
	}
	expired, err := signSubscriberToken(tokenRequest{User: "demo", TTL: time.Minute, SecretFile: secret}, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := rtspStatus(t, fmt.Sprintf("rtsp://%s/vod/sample-007?token=%s", rtsp, expired)); !strings.Contains(out, "401") {
		t.Fatalf("an expired token:\n%s", out)
	}
}

func base64URL(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }
