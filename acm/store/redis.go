package store

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultRedisPrefix is the key prefix of a Redis store whose
// RedisOptions.Prefix is empty.
const DefaultRedisPrefix = "vodcluster:"

// Redis key names under the prefix.
const (
	redisSessions     = "sessions"      // hash: session id -> Session JSON
	redisTitles       = "titles"        // hash: title id -> Title JSON
	redisTitlesDigest = "titles-digest" // string: SHA-256 (hex) of the titles as ReplaceTitles last wrote them
	redisState        = "state"         // hash: state name -> value
	redisLock         = "lock:"         // string per lock: lock:<name> -> holder, with an expiry
	redisLockHolder   = "lock-holder:"  // string per lock: lock-holder:<name> -> the token of its last holder's tenure, no expiry (TakeLock)
)

// redisBatch is how many hash fields one HSET carries (a large catalog is
// sent as several HSETs inside one MULTI/EXEC).
const redisBatch = 1000

// RedisOptions configures OpenRedis.
type RedisOptions struct {
	// Addr is the server's host:port; required.
	Addr string
	// Username and Password authenticate (Redis ACL user, or only
	// Password for requirepass); empty: no AUTH.
	Username string
	Password string
	// DB is the logical database number (SELECT), 0 by default.
	DB int
	// Prefix starts every key of this store, so that several clusters can
	// share one Redis; empty means DefaultRedisPrefix.
	Prefix string
	// TLS, when set, makes the connection TLS with this configuration.
	TLS *tls.Config
	// DialTimeout bounds connecting and the PING of OpenRedis, 5 s when 0.
	DialTimeout time.Duration
}

// Redis is the shared Store: several managers keep their sessions,
// catalog and named state in one Redis (go-redis/v9), under a key prefix.
// Sessions, titles and states are three hashes (<prefix>sessions,
// <prefix>titles, <prefix>state) whose fields are ids and whose values
// are the JSON of Session and Title (raw bytes for states). A call's
// context deadline bounds its round trip. Redis is also a Locker: the
// leader lock of the managers sharing it.
//
// Durability is Redis's: a call returns when the server acknowledged the
// write; configure the server's persistence (appendonly) accordingly.
type Redis struct {
	c      *redis.Client
	addr   string // the Redis's, for an *AuthError
	prefix string
	closed atomic.Bool
	// tenures (lockMu): by lock name and holder, the token of the
	// lock's tenure Redis last answered TakeLock the holder held (the
	// lock-holder:<name> record), for TakeLock's kept.
	lockMu  sync.Mutex
	tenures map[string]string
}

var (
	_ Store  = (*Redis)(nil)
	_ Locker = (*Redis)(nil)
)

// OpenRedis connects to the Redis of opts and checks it answers (PING,
// bounded by opts.DialTimeout). Errors: an empty or malformed Addr, a
// negative DB, a server that cannot be reached, or one that refuses the
// credentials (*AuthError: a password wanted, or the one given refused).
func OpenRedis(opts RedisOptions) (*Redis, error) {
	redisLogOnce.Do(func() { redis.SetLogger(redisLog{}) })
	if opts.Addr == "" {
		return nil, errors.New("store: redis: empty address")
	}
	if opts.DB < 0 {
		return nil, fmt.Errorf("store: redis: db %d < 0", opts.DB)
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultRedisPrefix
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 5 * time.Second
	}
	c := redis.NewClient(&redis.Options{
		Addr:                  opts.Addr,
		Username:              opts.Username,
		Password:              opts.Password,
		DB:                    opts.DB,
		TLSConfig:             opts.TLS,
		DialTimeout:           opts.DialTimeout,
		ContextTimeoutEnabled: true,
		// A server that is down fails a call in a few connection
		// attempts rather than at its deadline. Every command the store
		// sends is idempotent, so a retry is safe. A server that stalls
		// (alive, answering nothing) has each attempt wait for its read
		// timeout (3 s, or the call's deadline when sooner) before the
		// retry: the caller's deadline bounds a call then (the manager
		// gives a front-door request's store work its StoreTimeout).
		MaxRetries:      2,
		DialerRetries:   2,
		DisableIdentity: true,
	})
	ctx, cancel := context.WithTimeout(context.Background(), opts.DialTimeout)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		if ae := authError(opts.Addr, err); ae != nil {
			return nil, ae
		}
		return nil, fmt.Errorf("store: redis %s: %w", opts.Addr, err)
	}
	return &Redis{c: c, addr: opts.Addr, prefix: opts.Prefix}, nil
}

// redisLog takes go-redis's own messages (a connection pool that failed
// to dial, retried, ...), which it would print to standard error in a
// format of its own, into the process's log (slog.Default), so that they
// follow --log-format: at debug level, with component=redis, since the
// failures they tell of reach the manager as the errors of its store
// calls, which it logs itself ("store unavailable").
type redisLog struct{}

// Printf implements go-redis's internal.Logging.
func (redisLog) Printf(ctx context.Context, format string, v ...any) {
	slog.Default().DebugContext(ctx, strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: "), "component", "redis")
}

// redisLogOnce installs redisLog (go-redis has one logger per process).
var redisLogOnce sync.Once

// Prefix returns the key prefix in use.
func (r *Redis) Prefix() string { return r.prefix }

// Close implements Store: it closes the connections; calls in flight fail
// with ErrClosed. Closing twice is not an error.
func (r *Redis) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	return r.c.Close()
}

func (r *Redis) key(name string) string { return r.prefix + name }

// check fails with ErrClosed after Close.
func (r *Redis) check() error {
	if r.closed.Load() {
		return ErrClosed
	}
	return nil
}

// wrap maps go-redis errors: a closed client is ErrClosed; credentials
// refused (NOAUTH, WRONGPASS: the Redis's password changed since it was
// opened) have an *AuthError among their causes (errors.As); what names
// a missing key or field is the caller's to map to ErrNotFound.
func (r *Redis) wrap(what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redis.ErrClosed) || r.closed.Load():
		return fmt.Errorf("%w: %s: %v", ErrClosed, what, err)
	}
	wrapped := fmt.Errorf("store: redis: %s: %w", what, err)
	if ae := authError(r.addr, err); ae != nil {
		return &authCallError{error: wrapped, auth: ae.(*AuthError)}
	}
	return wrapped
}

// PutSession implements Store.
func (r *Redis) PutSession(ctx context.Context, s Session) error {
	if s.ID == "" {
		return errors.New("store: session without id")
	}
	v, err := json.Marshal(&s)
	if err != nil {
		return fmt.Errorf("store: session %s: %w", s.ID, err)
	}
	if err := r.check(); err != nil {
		return err
	}
	return r.wrap("put session "+s.ID, r.c.HSet(ctx, r.key(redisSessions), s.ID, v).Err())
}

// DeleteSession implements Store.
func (r *Redis) DeleteSession(ctx context.Context, id string) error {
	if err := r.check(); err != nil {
		return err
	}
	return r.wrap("delete session "+id, r.c.HDel(ctx, r.key(redisSessions), id).Err())
}

// Session implements Store.
func (r *Redis) Session(ctx context.Context, id string) (Session, error) {
	if err := r.check(); err != nil {
		return Session{}, err
	}
	b, err := r.c.HGet(ctx, r.key(redisSessions), id).Bytes()
	if errors.Is(err, redis.Nil) {
		return Session{}, fmt.Errorf("%w: session %s", ErrNotFound, id)
	}
	if err != nil {
		return Session{}, r.wrap("session "+id, err)
	}
	s, err := decodeSession(id, b)
	if err != nil {
		return Session{}, fmt.Errorf("%w (remove it: %s)", err, r.hdel(redisSessions, id))
	}
	s.Digest = entryDigest(b)
	return s, nil
}

// hdel returns the redis-cli command that removes field id of hash name.
func (r *Redis) hdel(name, id string) string {
	return "HDEL " + cliArg(r.key(name)) + " " + cliArg(id)
}

// cliArg is s as one redis-cli argument: as it is when it holds only
// letters, digits and ._:/-, else in double quotes, with \xHH for each
// byte other than printable ASCII, and \" and \\ (redis-cli's quoting).
func cliArg(s string) string {
	plain := s != ""
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._:/-", c) >= 0) {
			plain = false
		}
	}
	if plain {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range []byte(s) {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < ' ' || c > '~':
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// entryDigest returns Session.Digest of a stored entry: the SHA-1 (hex)
// of its bytes, as the compare-and-set scripts compute it (heldScript:
// redis.sha1hex). SHA-1 tells apart the entries the managers write, not
// an attacker's: it is no security.
func entryDigest(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// Sessions implements Store. The hash is read with HSCAN, so a large
// table does not block the server; sessions written during the scan may
// or may not be included. A skipped entry's Remove is the HDEL of its
// field.
func (r *Redis) Sessions(ctx context.Context) ([]Session, []Skipped, error) {
	vals, err := r.scanHash(ctx, redisSessions)
	if err != nil {
		return nil, nil, err
	}
	out := make([]Session, 0, len(vals))
	var skipped []Skipped
	for id, v := range vals {
		s, err := decodeSession(id, []byte(v))
		if err != nil {
			skipped = append(skipped, Skipped{ID: id, Remove: r.hdel(redisSessions, id), Err: err})
			continue
		}
		s.Digest = entryDigest([]byte(v))
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	sort.Slice(skipped, func(i, j int) bool { return skipped[i].ID < skipped[j].ID })
	return out, skipped, nil
}

// scanHash returns every field of hash name (HSCAN; a field seen twice is
// kept once).
func (r *Redis) scanHash(ctx context.Context, name string) (map[string]string, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	out := map[string]string{}
	var cursor uint64
	for {
		kv, next, err := r.c.HScan(ctx, r.key(name), cursor, "", redisBatch).Result()
		if err != nil {
			return nil, r.wrap("scan "+name, err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		if cursor = next; cursor == 0 {
			return out, nil
		}
	}
}

// ReplaceTitles implements Store: the titles hash is deleted and written
// again inside one MULTI/EXEC, so readers see the old catalog or the new
// one, never a mix. A catalog equal to the one stored (same titles in the
// same order, as its digest key and the hash's length tell) is not
// written again: a manager refreshes the catalog every minute, and
// rewriting 100,000 unchanged titles (16 MB) each time would keep Redis
// busy for a tenth of a second and grow its append-only file by as much.
func (r *Redis) ReplaceTitles(ctx context.Context, titles []Title) error {
	fields := make([]any, 0, 2*len(titles))
	h := sha256.New()
	for i := range titles {
		if titles[i].ID == "" {
			return errors.New("store: title without id")
		}
		v, err := json.Marshal(&titles[i])
		if err != nil {
			return fmt.Errorf("store: title %s: %w", titles[i].ID, err)
		}
		fields = append(fields, titles[i].ID, v)
		fmt.Fprintf(h, "%d:%s%d:%s", len(titles[i].ID), titles[i].ID, len(v), v)
	}
	digest := hex.EncodeToString(h.Sum(nil))
	if err := r.check(); err != nil {
		return err
	}
	k, dk := r.key(redisTitles), r.key(redisTitlesDigest)
	var stored *redis.StringCmd
	var n *redis.IntCmd
	if _, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		stored, n = p.Get(ctx, dk), p.HLen(ctx, k)
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return r.wrap("replace titles", err)
	}
	if stored.Val() == digest && n.Val() == int64(len(titles)) {
		return nil
	}
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, k, dk)
		for len(fields) > 0 {
			n := min(len(fields), 2*redisBatch)
			p.HSet(ctx, k, fields[:n]...)
			fields = fields[n:]
		}
		p.Set(ctx, dk, digest, 0)
		return nil
	})
	return r.wrap("replace titles", err)
}

// Titles implements Store; the error of an entry that does not decode
// names the HDEL of its field.
func (r *Redis) Titles(ctx context.Context) ([]Title, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	// HGETALL, not HSCAN: the catalog is read whole at once, as
	// ReplaceTitles wrote it.
	vals, err := r.c.HGetAll(ctx, r.key(redisTitles)).Result()
	if err != nil {
		return nil, r.wrap("titles", err)
	}
	out := make([]Title, 0, len(vals))
	for id, v := range vals {
		t, err := decodeTitle(id, []byte(v))
		if err != nil {
			// Once the entry is removed, the hash no longer matches the
			// digest: the next ReplaceTitles writes the catalog whole.
			return nil, fmt.Errorf("%w (remove it: %s; the next read of the origin's catalog writes the catalog again)", err, r.hdel(redisTitles, id))
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// PutState implements Store. It fails on a name that does not match
// StateNamePattern. With a deadline in ctx the write is fenced by it
// (putStateFenced): Redis does not apply it after the deadline, when its
// caller has given up (a Redis that stalled, then ran again).
func (r *Redis) PutState(ctx context.Context, name string, value []byte) error {
	if !StateNamePattern.MatchString(name) {
		return fmt.Errorf("store: state name %q: want %s", name, StateNamePattern)
	}
	if err := r.check(); err != nil {
		return err
	}
	if value == nil {
		value = []byte{}
	}
	if dl, ok := ctx.Deadline(); ok {
		return r.wrap("put state "+name, r.putStateFenced(ctx, dl, name, value))
	}
	return r.wrap("put state "+name, r.c.HSet(ctx, r.key(redisState), name, value).Err())
}

// State implements Store.
func (r *Redis) State(ctx context.Context, name string) ([]byte, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	b, err := r.c.HGet(ctx, r.key(redisState), name).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: state %s", ErrNotFound, name)
	}
	return b, r.wrap("state "+name, err)
}
