package store

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"
)

// Backends of Open.
const (
	BackendBadger = "badger" // embedded, one manager (the default)
	BackendRedis  = "redis"  // shared by an active and standby managers
)

// Open opens the store of backend: BackendBadger ("" too) in dir, with
// logger for badger's warnings, or BackendRedis with r. Errors: an
// unknown backend, Redis options given to badger (a configuration mixing
// both would silently run on the embedded store), and those of OpenBadger
// and OpenRedis.
func Open(backend, dir string, r RedisOptions, logger *slog.Logger) (Store, error) {
	switch backend {
	case "", BackendBadger:
		if r != (RedisOptions{}) {
			return nil, fmt.Errorf("store: redis settings given, but the backend is %s (set backend: %s)", BackendBadger, BackendRedis)
		}
		return OpenBadger(dir, logger)
	case BackendRedis:
		return OpenRedis(r)
	}
	return nil, fmt.Errorf("store: backend %q: want %s or %s", backend, BackendBadger, BackendRedis)
}

// RedisTLS returns the TLS configuration of a connection to the Redis at
// addr (host:port): the server's certificate is verified for addr's host
// against the PEM certificates of caFile, or the system's roots when
// caFile is "". Errors: a malformed addr, an unreadable caFile or one
// without a PEM certificate.
func RedisTLS(addr, caFile string) (*tls.Config, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("store: redis address %q: %w", addr, err)
	}
	c := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	if caFile != "" {
		b, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("store: redis CA: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("store: redis CA %s: no PEM certificate", caFile)
		}
	}
	return c, nil
}
