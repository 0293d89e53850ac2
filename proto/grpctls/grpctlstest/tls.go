package grpctlstest

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
)

// TLS writes a new CA and a server certificate for hosts into a
// directory of tb's (Write) and returns the files, a server configuration
// of that certificate and a client configuration that trusts the CA (its
// ServerName left to the client to set, or to the dialled host). It fails
// tb on any error.
func TLS(tb testing.TB, hosts ...string) (f Files, server, client *tls.Config) {
	tb.Helper()
	f, err := Write(tb.TempDir(), "", hosts...)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		tb.Fatal(err)
	}
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		tb.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		tb.Fatalf("grpctlstest: %s holds no certificate", f.CA)
	}
	return f, &tls.Config{Certificates: []tls.Certificate{cert}}, &tls.Config{RootCAs: roots}
}
