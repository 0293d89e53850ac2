package main

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"vodcluster/proto/grpctls"
	"vodcluster/proto/grpctls/grpctlstest"
	v1 "vodcluster/proto/vodcluster/v1"
)

// adminServer serves an Admin API that implements nothing on loopback,
// with creds (nil: plaintext), and returns its address.
func adminServer(t *testing.T, creds credentials.TransportCredentials) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	srv := grpc.NewServer(opts...)
	v1.RegisterAdminServer(srv, v1.UnimplementedAdminServer{})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// vodctl reaches a manager whose gRPC is TLS with --tls-ca, and says
// which flag is missing or wrong when TLS is on one side only or the CA
// is not the manager's.
func TestTLSFlags(t *testing.T) {
	dir := t.TempDir()
	f, err := grpctlstest.Write(dir, "", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	other, err := grpctlstest.Write(dir, "other-", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	creds, err := grpctls.Server(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	tlsAddr, plainAddr := adminServer(t, creds), adminServer(t, nil)
	t.Setenv("VODCTL_TLS_CA", "")
	t.Setenv("VODCTL_TLS", "")
	run := func(addr string, args ...string) error {
		cmd := newRoot()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append(append([]string{"--manager", addr, "--timeout", "5s"}, args...), "nodes"))
		return cmd.Execute()
	}
	// Through TLS to the manager: its Unimplemented answer.
	if err := run(tlsAddr, "--tls-ca", f.CA); err == nil || err.Error() != "method ListNodes not implemented [UNIMPLEMENTED]" {
		t.Fatalf("--tls-ca with the manager's CA: %v, want the manager's Unimplemented", err)
	}
	for _, c := range []struct {
		name, addr string
		args       []string
		want       string
	}{
		{"plaintext to TLS", tlsAddr, nil, "add --tls or --tls-ca"},
		{"another CA", tlsAddr, []string{"--tls-ca", other.CA}, "give its CA with --tls-ca"},
		{"system roots", tlsAddr, []string{"--tls"}, "give its CA with --tls-ca"},
		{"TLS to plaintext", plainAddr, []string{"--tls-ca", f.CA}, "speaks plaintext gRPC"},
		{"CA not a certificate", tlsAddr, []string{"--tls-ca", f.Key}, "--tls-ca: grpctls: CA file"},
		{"a name the certificate does not hold", "localhost:" + tlsAddr[strings.LastIndexByte(tlsAddr, ':')+1:], []string{"--tls-ca", f.CA}, "does not name localhost"},
	} {
		err := run(c.addr, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a hint with %q", c.name, err, c.want)
		}
	}
}
