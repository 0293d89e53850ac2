package store

import (
	"fmt"
	"log/slog"
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
