package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"vodcluster/proto/token"
)

// The origin's secret_file makes it ask every Origin call for the
// credential the manager and the nodes derive from the same cluster
// secret (hex or not, read as theirs); without it the origin asks none; a
// secret_file that cannot be read or is too short is refused, naming
// the key.
func TestCDPSecretFile(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := readSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newCDP(CDPConfig{Dir: dir, SecretFile: secret})
	if err != nil || s.Credential != token.OriginCredential(key) {
		t.Fatalf("with secret_file: credential %q, %v", s.Credential, err)
	}
	if s, err := newCDP(CDPConfig{Dir: dir}); err != nil || s.Credential != "" {
		t.Fatalf("without secret_file: credential %q, %v", s.Credential, err)
	}
	tiny := filepath.Join(dir, "tiny")
	os.WriteFile(tiny, []byte("abc\n"), 0o600)
	for _, f := range []string{tiny, filepath.Join(dir, "none")} {
		if _, err := newCDP(CDPConfig{Dir: dir, SecretFile: f}); err == nil || !strings.Contains(err.Error(), "secret_file") {
			t.Errorf("secret_file %s: %v", f, err)
		}
	}
}
