package redistest

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"testing"

	"vodcluster/proto/grpctls/grpctlstest"
)

// tlsFiles are the PEM files of a TLS server and the client configuration
// that trusts it.
type tlsFiles struct {
	cert, key, ca string
	client        *tls.Config
}

// StartTLS is Start with TLS only (no plain port): a test CA made for the
// test signs the server's certificate for 127.0.0.1, and Server.TLS is a
// client configuration trusting that CA.
func StartTLS(t testing.TB, args ...string) *Server {
	t.Helper()
	tf, err := makeTLSFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return startServer(t, tf, args)
}

// makeTLSFiles writes a test CA and a server certificate for 127.0.0.1
// signed by it (grpctlstest.Write) in dir.
func makeTLSFiles(dir string) (*tlsFiles, error) {
	f, err := grpctlstest.Write(dir, "redis-", "127.0.0.1")
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(b) {
		return nil, errors.New("redistest: test CA not PEM")
	}
	return &tlsFiles{cert: f.Cert, key: f.Key, ca: f.CA,
		client: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}}, nil
}
