package grpctls

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"vodcluster/proto/grpctls/grpctlstest"
	"vodcluster/proto/logtest"
)

// serve starts a gRPC server with the health service on loopback.
func serve(t *testing.T, creds credentials.TransportCredentials) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.Creds(creds))
	healthpb.RegisterHealthServer(s, health.NewServer())
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

// check makes one health call to addr over a new connection (with opts).
func check(t *testing.T, addr string, creds credentials.TransportCredentials, opts ...grpc.DialOption) error {
	t.Helper()
	cc, err := grpc.NewClient(addr, append(opts, grpc.WithTransportCredentials(creds))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

func mustClient(t *testing.T, enabled bool, ca string) credentials.TransportCredentials {
	t.Helper()
	c, err := Client(enabled, ca)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestServerAndClient(t *testing.T) {
	dir := t.TempDir()
	f, err := grpctlstest.Write(dir, "", "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Server(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, srv)
	if err := check(t, addr, mustClient(t, true, f.CA)); err != nil {
		t.Fatalf("client trusting the CA: %v", err)
	}
	_, port, _ := net.SplitHostPort(addr)
	if err := check(t, "localhost:"+port, mustClient(t, true, f.CA)); err != nil {
		t.Fatalf("client dialling a DNS name of the certificate: %v", err)
	}
	// The system's roots do not hold the test CA; plaintext to a TLS
	// server fails; a certificate for another host fails.
	if err := check(t, addr, mustClient(t, true, "")); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("client with the system's roots: %v, want a certificate error", err)
	}
	if err := check(t, addr, mustClient(t, false, "")); err == nil {
		t.Error("plaintext client reached a TLS server")
	}
	other, err := grpctlstest.Write(dir, "other-", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	srv2, err := Server(other.Cert, other.Key)
	if err != nil {
		t.Fatal(err)
	}
	if err := check(t, serve(t, srv2), mustClient(t, true, other.CA)); err == nil {
		t.Error("a certificate for 192.0.2.1 was accepted for 127.0.0.1")
	}
}

func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	a, _ := grpctlstest.Write(dir, "a-", "127.0.0.1")
	b, _ := grpctlstest.Write(dir, "b-", "127.0.0.1")
	for _, c := range []struct{ cert, key, want string }{
		{"", a.Key, "both"},
		{a.Cert, "", "both"},
		{dir + "/missing.pem", a.Key, "no such file"},
		{a.Cert, b.Key, "does not match"},
		{a.Key, a.Cert, "certificate"},
	} {
		if _, err := Server(c.cert, c.key); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Server(%q, %q) = %v, want an error with %q", c.cert, c.key, err, c.want)
		}
	}
	notPEM := dir + "/not.pem"
	os.WriteFile(notPEM, []byte("hello"), 0o600)
	for _, c := range []struct {
		on   bool
		ca   string
		want string
	}{{false, a.CA, "TLS is off"}, {true, notPEM, "no PEM certificate"}, {true, dir + "/missing.pem", "no such file"}} {
		if _, err := Client(c.on, c.ca); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Client(%v, %q) = %v, want an error with %q", c.on, c.ca, err, c.want)
		}
	}
}

// TestReload: a renewed certificate (here from another CA) is served to
// new connections once the once-a-second check has passed; a pair that
// does not load keeps the last good one.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	old, err := grpctlstest.Write(dir, "", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	srv, err := newServer(old.Cert, old.Key, now, func(time.Duration, func()) {})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, srv)
	oldCA := dir + "/old-ca.pem"
	if err := os.Rename(old.CA, oldCA); err != nil {
		t.Fatal(err)
	}
	if err := check(t, addr, mustClient(t, true, oldCA)); err != nil {
		t.Fatal(err)
	}
	bump := func(paths ...string) {
		t.Helper()
		m := time.Now().Add(time.Duration(clock.Load()%1000+1) * time.Second)
		for _, p := range paths {
			if err := os.Chtimes(p, m, m); err != nil {
				t.Fatal(err)
			}
		}
		clock.Add(int64(2 * time.Second))
	}

	// A half-written renewal (a key that is not PEM): the old pair stays.
	os.WriteFile(old.Key, []byte("half"), 0o600)
	bump(old.Key)
	if err := check(t, addr, mustClient(t, true, oldCA)); err != nil {
		t.Fatalf("after a bad renewal: %v (the last good pair should be served)", err)
	}

	renewed, err := grpctlstest.Write(dir, "", "127.0.0.1") // same file names, new CA
	if err != nil {
		t.Fatal(err)
	}
	bump(renewed.Cert, renewed.Key)
	if err := check(t, addr, mustClient(t, true, renewed.CA)); err != nil {
		t.Fatalf("renewed certificate not served: %v", err)
	}
	if err := check(t, addr, mustClient(t, true, oldCA)); err == nil {
		t.Error("the old certificate is still served after the renewal")
	}
}

// A renewal that does not load (a key of another certificate, junk in the
// certificate's file) and stays so for renewalGrace is logged once per
// change of the files, naming them and the error, and counted, however
// many handshakes see it; the old certificate is still served; a good
// renewal after it is taken, logged and counted. It was ignored without a word, and the next restart failed.
func TestReloadFailureLoggedOnce(t *testing.T) {
	var logs logtest.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	dir := t.TempDir()
	old, err := grpctlstest.Write(dir, "", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	oldCA := dir + "/old-ca.pem"
	if err := os.Rename(old.CA, oldCA); err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	srv, err := newServer(old.Cert, old.Key, func() time.Time { return time.Unix(0, clock.Load()) },
		func(time.Duration, func()) {}) // no re-check timer: the handshakes make the checks
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, srv)
	loaded0, refused0 := Reloads()
	step := int64(0)
	write := func(path string, data []byte) {
		t.Helper()
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		step++
		m := time.Now().Add(time.Duration(step) * time.Minute) // a new modification time, whatever the file system's resolution
		if err := os.Chtimes(path, m, m); err != nil {
			t.Fatal(err)
		}
	}
	handshakes := func(ca string) error { // three checks, the last more than renewalGrace after the first
		t.Helper()
		var err error
		for i := 0; i < 3; i++ {
			clock.Add(int64(renewalGrace*6/10 + time.Second))
			if err = check(t, addr, mustClient(t, true, ca)); err != nil {
				return err
			}
		}
		return err
	}
	warnings := func() int { return strings.Count(logs.String(), "TLS certificate renewal not loaded") }

	other, err := grpctlstest.Write(t.TempDir(), "", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := os.ReadFile(other.Key)
	if err != nil {
		t.Fatal(err)
	}
	write(old.Key, otherKey) // the key of another certificate
	if err := handshakes(oldCA); err != nil {
		t.Fatalf("after a key that does not match: %v (the last good pair should be served)", err)
	}
	if n := warnings(); n != 1 {
		t.Fatalf("%d warnings for one bad renewal over three handshakes, want 1:\n%s", n, logs.String())
	}
	for _, want := range []string{old.Cert, old.Key, "private key does not match public key", "level=WARN"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the warning lacks %q:\n%s", want, logs.String())
		}
	}
	if _, refused := Reloads(); refused != refused0+1 {
		t.Errorf("refused reloads %d, want %d", refused, refused0+1)
	}

	write(old.Cert, []byte("junk, not PEM\n")) // another change, another failure
	if err := handshakes(oldCA); err != nil {
		t.Fatalf("after junk in the certificate file: %v", err)
	}
	if n := warnings(); n != 2 {
		t.Fatalf("%d warnings after a second bad change, want 2:\n%s", n, logs.String())
	}
	if loaded, refused := Reloads(); refused != refused0+2 || loaded != loaded0 {
		t.Errorf("reloads loaded %d refused %d, want %d and %d", loaded, refused, loaded0, refused0+2)
	}

	renewed, err := grpctlstest.Write(dir, "", "127.0.0.1") // same file names, new CA
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{renewed.Cert, renewed.Key} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		write(f, b)
	}
	if err := handshakes(renewed.CA); err != nil {
		t.Fatalf("good renewal after bad ones not served: %v\n%s", err, logs.String())
	}
	if err := check(t, addr, mustClient(t, true, oldCA)); err == nil {
		t.Error("the old certificate is still served after the good renewal")
	}
	if loaded, refused := Reloads(); loaded != loaded0+1 || refused != refused0+2 {
		t.Errorf("reloads loaded %d refused %d, want %d and %d", loaded, refused, loaded0+1, refused0+2)
	}
	if n := warnings(); n != 2 || !strings.Contains(logs.String(), "TLS certificate reloaded") {
		t.Errorf("after the good renewal: %d warnings (want 2) and no info line?\n%s", n, logs.String())
	}
}

// Hint names the TLS mismatch behind each connection error of a link
// configured on one side only, and nothing for other errors.
func TestHint(t *testing.T) {
	dir := t.TempDir()
	f, err := grpctlstest.Write(dir, "", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := grpctlstest.Write(dir, "other-", "127.0.0.1")
	srv, err := Server(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	tlsAddr := serve(t, srv)
	plainAddr := serve(t, insecureServer())
	for _, c := range []struct {
		name  string
		addr  string
		creds credentials.TransportCredentials
		want  string
	}{
		{"plaintext to TLS", tlsAddr, mustClient(t, false, ""), "turn TLS on"},
		{"TLS to plaintext", plainAddr, mustClient(t, true, f.CA), "server speaks plaintext"},
		{"untrusted", tlsAddr, mustClient(t, true, other.CA), "not trusted"},
		{"fine", tlsAddr, mustClient(t, true, f.CA), ""},
	} {
		err := check(t, c.addr, c.creds)
		if h := Hint(err); (c.want == "" && h != "") || !strings.Contains(h, c.want) {
			t.Errorf("%s: Hint(%v) = %q, want %q", c.name, err, h, c.want)
		}
		// the origin link's: the same, naming its keys
		if h := OriginHint(err); (c.want == "" && h != "") || !strings.Contains(h, c.want) || (h != "" && !strings.Contains(h, "(origin_tls, origin_tls_ca_file)")) {
			t.Errorf("%s: OriginHint(%v) = %q, want %q", c.name, err, h, c.want)
		}
	}
	// the origin's refusal of the credential: its secret_file
	if h := OriginHint(status.Error(codes.Unauthenticated, "missing or wrong bearer credential")); !strings.Contains(h, "origin's secret_file") {
		t.Errorf("OriginHint(UNAUTHENTICATED) = %q", h)
	}
	if h := OriginHint(status.Error(codes.NotFound, "no title")); h != "" {
		t.Errorf("OriginHint(NOT_FOUND) = %q", h)
	}
	// A server that accepts and never answers (stopped with SIGSTOP,
	// overloaded): the client gives up waiting for its preface, which is
	// no TLS matter.
	if err := checkSilent(t); err == nil || !strings.Contains(err.Error(), "server preface") {
		t.Fatalf("a silent server: %v, want a wait for its preface that failed", err)
	} else if h := Hint(err); h != "" {
		t.Errorf("a silent server: Hint(%v) = %q, want none", err, h)
	}
	if h := Hint(errors.New("rpc error: code = NotFound desc = no such title")); h != "" {
		t.Errorf("Hint of a NotFound: %q", h)
	}
}

// checkSilent makes one health call, with a connect timeout of 300 ms,
// to a listener that accepts connections and never writes.
func checkSilent(t *testing.T) error {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn // held open, never answered
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := lis.Accept()
			if err != nil {
				return // closed by the cleanup
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { lis.Close(); <-done })
	return check(t, lis.Addr().String(), insecure.NewCredentials(),
		grpc.WithConnectParams(grpc.ConnectParams{MinConnectTimeout: 300 * time.Millisecond, Backoff: backoff.DefaultConfig}))
}

func insecureServer() credentials.TransportCredentials { return insecure.NewCredentials() }
