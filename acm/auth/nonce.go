package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"sync/atomic"
	"time"
)

// Errors of Nonces.Check.
var (
	ErrNonceInvalid = errors.New("auth: nonce not issued by this cluster") // wrong MAC or shape
	ErrNonceStale   = errors.New("auth: nonce expired")                    // answer 401 with stale=true
)

// DefaultNonceTTL is how long a Digest nonce is accepted after issue.
const DefaultNonceTTL = 5 * time.Minute

// nonceSkew is how far in the future an issue time may lie (clock skew
// between managers sharing the secret).
const nonceSkew = 5 * time.Second

// Nonces issues and checks stateless Digest nonces: 16 hex digits of the
// issue time (Unix ms, big endian) followed by 32 hex digits of
// HMAC-SHA256(key, time bytes)[:16], the key derived from the cluster
// secret. Nothing is stored, so every manager sharing the secret accepts
// the nonces of the others; a nonce may be replayed until it expires (no
// nonce-count tracking here: see Replays). Safe for concurrent use.
type Nonces struct {
	key       []byte
	ttl       time.Duration
	lastFresh atomic.Int64 // the last IssueFresh stamp, Unix ms
}

// NewNonces returns a nonce issuer whose nonces live ttl (DefaultNonceTTL
// when ttl <= 0), keyed by secret.
func NewNonces(secret []byte, ttl time.Duration) *Nonces {
	if ttl <= 0 {
		ttl = DefaultNonceTTL
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("vodcluster digest nonce v1"))
	return &Nonces{key: m.Sum(nil), ttl: ttl}
}

// TTL returns how long a nonce is accepted after issue.
func (n *Nonces) TTL() time.Duration { return n.ttl }

// Issue returns a nonce stamped with now, to the second: the nonces
// issued within one second are the same, so that a client resending the
// credentials it was refused (GStreamer's rtspsrc sends a wrong password
// eight times, taking each 401's nonce) sends the same Authorization
// header, which the front door's failed-login limit counts once. (A
// nonce guards nothing more than its age: Replays refuses a response
// sent twice.)
func (n *Nonces) Issue(now time.Time) string {
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], uint64(now.Unix()*1000))
	return hex.EncodeToString(ts[:]) + hex.EncodeToString(n.mac(ts[:]))
}

// IssueFresh returns a nonce stamped with now to the millisecond, never
// on a whole second, so that it differs from Issue's nonce of the same
// second, and never the one it returned before (up to 1,000 a second): the nonce of a stale=true challenge, for a client whose Digest
// response was refused as already used (see Replays) or whose nonce
// expired, which could otherwise be sent a nonce it used this second and
// compute a refused response again.
func (n *Nonces) IssueFresh(now time.Time) string {
	// Each stamp is past the last one (up to a second ahead of now), so
	// clients refused together, having sent the same response, get
	// distinct nonces and do not collide again.
	ms := now.UnixMilli()
	stamp := ms
	for {
		last := n.lastFresh.Load()
		next := max(ms, last+1)
		if next%1000 == 0 {
			next++
		}
		if next > ms+1000 {
			break // over 1,000 a second: stamps are shared again
		}
		if n.lastFresh.CompareAndSwap(last, next) {
			stamp = next
			break
		}
	}
	if stamp%1000 == 0 {
		stamp++
	}
	ms = stamp
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], uint64(ms))
	return hex.EncodeToString(ts[:]) + hex.EncodeToString(n.mac(ts[:]))
}

func (n *Nonces) mac(ts []byte) []byte {
	m := hmac.New(sha256.New, n.key)
	m.Write(ts)
	return m.Sum(nil)[:16]
}

// Check reports whether nonce was issued by Issue with the same secret and
// is still valid at now: ErrNonceInvalid for a forged or malformed nonce
// or one stamped in the future, ErrNonceStale for one older than the TTL.
func (n *Nonces) Check(nonce string, now time.Time) error {
	raw, err := hex.DecodeString(nonce)
	if err != nil || len(raw) != 24 {
		return ErrNonceInvalid
	}
	if !hmac.Equal(raw[8:], n.mac(raw[:8])) {
		return ErrNonceInvalid
	}
	issued := time.UnixMilli(int64(binary.BigEndian.Uint64(raw[:8])))
	switch {
	case issued.After(now.Add(nonceSkew)):
		return ErrNonceInvalid
	case now.Sub(issued) > n.ttl:
		return ErrNonceStale
	}
	return nil
}
