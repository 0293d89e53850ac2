package grpctls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Server returns the transport credentials of a gRPC server that speaks
// TLS 1.2 or later with the certificate chain of certFile and the private
// key of keyFile (PEM). Both files are read now and again at a handshake
// after either file's modification time changed (checked at most once a
// second; a symbolic link swapped to other files counts as a change
// whatever their times), so a renewed certificate is served to new
// connections without a restart; while the renewed pair cannot be loaded
// (half written, a key that does not match, the second file of a renewal
// written one file at a time not there yet) the last good pair is served
// and the files are tried again a second later. A renewal that still does
// not load, its files unchanged, 10 s (renewalGrace) after it was first
// seen is logged (a warning naming both files and the error) once per
// change of the files, and counted (Reloads); one that loads is logged at
// info.
//
// Errors: a missing file name, or a pair that cannot be read or does not
// match (the message names both files).
func Server(certFile, keyFile string) (credentials.TransportCredentials, error) {
	return newServer(certFile, keyFile, time.Now, nil)
}

// newServer is Server with the clock of the reload check and the timer
// of the re-check a failure starts (nil: time.AfterFunc).
func newServer(certFile, keyFile string, now func() time.Time, after func(time.Duration, func())) (credentials.TransportCredentials, error) {
	c, err := newServerConfig(certFile, keyFile, now, after)
	if err != nil {
		return nil, err
	}
	return credentials.NewTLS(c), nil
}

// ServerConfig is Server's TLS configuration, for a server that is not
// gRPC: the HTTPS front door and the nodes' HTTPS (package crypto/tls;
// tls.NewListener). The pair is reloaded as Server's. Errors: as Server.
func ServerConfig(certFile, keyFile string) (*tls.Config, error) {
	return newServerConfig(certFile, keyFile, time.Now, nil)
}

func newServerConfig(certFile, keyFile string, now func() time.Time, after func(time.Duration, func())) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("grpctls: a server needs both a certificate file and a key file")
	}
	if after == nil {
		after = func(d time.Duration, f func()) { time.AfterFunc(d, f) }
	}
	r := &reloader{certFile: certFile, keyFile: keyFile, now: now, after: after}
	if err := r.load(); err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return r.get() },
	}, nil
}

// Client returns the transport credentials of a gRPC client: plaintext
// when enabled is false (caFile must then be empty), else TLS 1.2 or later
// with the server's certificate verified for the host of the address
// dialled (gRPC's authority) against the PEM certificates of caFile, or
// the system's roots when caFile is "".
//
// Errors: a caFile given without enabled, an unreadable caFile or one
// holding no PEM certificate.
func Client(enabled bool, caFile string) (credentials.TransportCredentials, error) {
	if !enabled {
		if caFile != "" {
			return nil, fmt.Errorf("grpctls: CA file %s given but TLS is off", caFile)
		}
		return insecure.NewCredentials(), nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := CertPool(caFile)
		if err != nil {
			return nil, err
		}
		c.RootCAs = pool
	}
	return credentials.NewTLS(c), nil
}

// CertPool returns the PEM certificates of caFile as a pool to verify
// servers with (tls.Config.RootCAs). Errors: an unreadable file, or one
// holding no PEM certificate.
func CertPool(caFile string) (*x509.CertPool, error) {
	b, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("grpctls: CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("grpctls: CA file %s holds no PEM certificate", caFile)
	}
	return pool, nil
}

// reloader holds a certificate and key pair and reloads it when either
// file changes: its modification time, or the file its name leads to (a
// symbolic link swapped, a file renamed over it).
type reloader struct {
	certFile, keyFile string
	now               func() time.Time            // the clock of the once-a-second check
	after             func(time.Duration, func()) // runs a re-check a grace after a failure (time.AfterFunc)

	mu        sync.Mutex
	cert      *tls.Certificate
	certMod   time.Time
	keyMod    time.Time
	certInfo  os.FileInfo // the files loaded (os.SameFile)
	keyInfo   os.FileInfo
	checkedAt time.Time
	pending   string    // a failure seen, not yet warned (error and the files' times and sizes); "" when none
	pendingAt time.Time // when pending was first seen
	failed    string    // the last failure warned; "" after a good load
}

// renewalGrace is how long the files of a renewal that does not load
// must stay as they are before it is warned: a renewal written one file
// at a time (certbot swaps its live/ links one by one; a copy of the
// certificate, then of the key) has the second file there well within it.
const renewalGrace = 10 * time.Second

// load reads the pair if either file changed since the last load. The
// caller holds r.mu, or r is not shared yet.
func (r *reloader) load() error {
	ci, err := os.Stat(r.certFile)
	if err != nil {
		return fmt.Errorf("grpctls: certificate: %w", err)
	}
	ki, err := os.Stat(r.keyFile)
	if err != nil {
		return fmt.Errorf("grpctls: key: %w", err)
	}
	if r.cert != nil && ci.ModTime().Equal(r.certMod) && ki.ModTime().Equal(r.keyMod) &&
		os.SameFile(ci, r.certInfo) && os.SameFile(ki, r.keyInfo) {
		return nil
	}
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("grpctls: certificate %s and key %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert, r.certMod, r.keyMod, r.certInfo, r.keyInfo = &c, ci.ModTime(), ki.ModTime(), ci, ki
	return nil
}

// get returns the current pair, reloading it first when the files changed
// and the last check is more than a second old. A failed reload keeps
// serving the last good pair.
func (r *reloader) get() (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.now(); now.Sub(r.checkedAt) >= time.Second {
		r.checkedAt = now
		r.reload(now)
	}
	return r.cert, nil
}

// recheck is get's check, run by the timer a failure starts: a renewal
// that does not load is warned a grace later even if no handshake comes
// (a gRPC server's clients keep their connections for days).
func (r *reloader) recheck() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.checkedAt = now
	r.reload(now)
}

// reload loads the pair if the files changed, keeping the last good pair
// when it does not load (a half-written renewal, a key that does not
// match, the second file of a renewal not there yet). A failure is logged
// and counted once its files have stayed as they are for renewalGrace (a
// re-check is started for then), and once per change of the files (not at
// every check while they stay as they are); a new pair taken is logged at
// info and counted. The caller holds r.mu.
func (r *reloader) reload(now time.Time) {
	prev := r.cert
	err := r.load()
	if err == nil {
		r.pending, r.failed = "", ""
		if r.cert != prev {
			reloadsLoaded.Add(1)
			slog.Info("TLS certificate reloaded", "cert", r.certFile, "key", r.keyFile)
		}
		return
	}
	// The files as they are now, with the error: the same failure seen
	// again a second later is the same change of the files.
	sig := err.Error()
	for _, f := range []string{r.certFile, r.keyFile} {
		if fi, serr := os.Stat(f); serr == nil {
			sig += fmt.Sprintf("|%d %d", fi.ModTime().UnixNano(), fi.Size()) // wall clock: the file's mtime
		}
	}
	switch {
	case sig == r.failed:
		return
	case sig != r.pending:
		r.pending, r.pendingAt = sig, now
		slog.Debug("TLS certificate files changed and do not load yet: tried again", "cert", r.certFile, "key", r.keyFile, "err", err)
		r.after(renewalGrace, r.recheck)
		return
	case now.Sub(r.pendingAt) < renewalGrace:
		return
	}
	r.pending, r.failed = "", sig
	reloadsRefused.Add(1)
	slog.Warn("TLS certificate renewal not loaded: the previous certificate is still served, and a restart would fail until the files are fixed",
		"cert", r.certFile, "key", r.keyFile, "unchanged_for", now.Sub(r.pendingAt).Round(time.Second).String(), "err", err)
}

// Counts of the process's certificate reloads (Reloads).
var reloadsLoaded, reloadsRefused atomic.Uint64

// Reloads returns how many renewed certificate and key pairs the servers
// of this process (Server, ServerConfig) have taken since it started,
// and how many changes of their files did not load (a key that does not
// match the certificate, a file that is not PEM, a file missing): each
// change of the files is counted once, however many handshakes see it.
func Reloads() (loaded, refused uint64) {
	return reloadsLoaded.Load(), reloadsRefused.Load()
}

// Mismatch is why a gRPC connection failed at its TLS setup (Classify).
type Mismatch int

// The kinds of Mismatch.
const (
	NoMismatch      Mismatch = iota // not a TLS matter (or no error)
	Untrusted                       // the server's certificate is not signed by a CA the client trusts
	WrongName                       // the certificate does not name the address dialled
	ServerPlaintext                 // the client has TLS on, the server speaks plaintext gRPC
	ServerTLS                       // the server closed a plaintext connection at once: it likely has TLS on (not a server that never answered)
)

// Classify tells which TLS mismatch a gRPC connection error comes from,
// from gRPC's and crypto/tls's messages; NoMismatch for any other error
// (nil included).
func Classify(err error) Mismatch {
	if err == nil {
		return NoMismatch
	}
	msg := err.Error()
	switch {
	case !strings.Contains(msg, "connection error"):
		return NoMismatch
	case strings.Contains(msg, "is valid for") || strings.Contains(msg, "not valid for any names"):
		return WrongName
	case strings.Contains(msg, "x509") || strings.Contains(msg, "certificate"):
		return Untrusted
	case strings.Contains(msg, "does not look like a TLS handshake"):
		return ServerPlaintext
	case strings.Contains(msg, "server preface") && !strings.Contains(msg, "use of closed network connection"):
		// The server closed the connection (EOF, reset) on the client's
		// preface. A connection the client closed itself while waiting
		// for the server's preface (its connect timeout) is a server
		// that accepted and never answered: stopped or overloaded.
		return ServerTLS
	}
	return NoMismatch
}

// Hint explains a gRPC connection error that comes from TLS being set up
// on one side of a link only, or from a certificate the client does not
// trust (Classify), in an operator's words; it returns "" for any other
// error (nil included). The words name no configuration key: the caller
// adds the keys or flags of its link.
func Hint(err error) string {
	switch Classify(err) {
	case Untrusted, WrongName:
		return "TLS: the server's certificate is not trusted for this address (CA file, or the certificate's names)"
	case ServerPlaintext:
		return "TLS: this link has TLS on but the server speaks plaintext gRPC"
	case ServerTLS:
		return "the server closed the connection at once: if it has a TLS certificate configured, turn TLS on for this link"
	}
	return ""
}

// OriginHint explains an error of the link to the origin (manager or node
// to origin) for its log line: Hint's, naming the keys of that link
// (origin_tls, origin_tls_ca_file), or, for the origin's UNAUTHENTICATED,
// that the origin's secret_file must hold the cluster secret of the
// manager and nodes (the credential they send is derived from theirs:
// token.OriginCredential). It returns "" for any other error.
func OriginHint(err error) string {
	if h := Hint(err); h != "" {
		return h + " (origin_tls, origin_tls_ca_file)"
	}
	if status.Code(err) == codes.Unauthenticated {
		return "the origin refuses the credential this process sends: the origin's secret_file must hold the cluster secret of the manager and the nodes"
	}
	return ""
}
