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
// issue time (Unix ms, big endian), 16 of the connection's key (IssueTo;
// 0 for Issue and IssueFresh), then 32 hex digits of HMAC-SHA256(key,
// time and connection bytes)[:16], the key derived from the cluster
// secret. (Nonces of the first form, without the connection's key, are
// still accepted: those issued before an upgrade.) Nothing is stored, so
// every manager sharing the secret accepts the nonces of the others; a
// nonce may be replayed until it expires (no nonce-count tracking here:
// see Replays). Safe for concurrent use.
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
func (n *Nonces) Issue(now time.Time) string { return n.IssueTo(now, 0) }

// IssueTo is Issue for the client connection whose key is conn (a hash of
// its addresses): the same nonce for its challenges within one second,
// another one for another connection's. Digest clients that send no qop
// (and so no cnonce: GStreamer, live555, gortsplib) of one account that
// start at the same second on several boxes then compute different
// responses, none refused as a replay of another's (gortsplib does not
// retry after a stale=true 401).
func (n *Nonces) IssueTo(now time.Time, conn uint64) string {
	return n.encode(uint64(now.Unix()*1000), conn)
}

// encode is the nonce of stamp (Unix ms) and conn.
func (n *Nonces) encode(stamp, conn uint64) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], stamp)
	binary.BigEndian.PutUint64(b[8:], conn)
	return hex.EncodeToString(b[:]) + hex.EncodeToString(n.mac(b[:]))
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
	return n.encode(uint64(stamp), 0)
}

func (n *Nonces) mac(ts []byte) []byte {
	m := hmac.New(sha256.New, n.key)
	m.Write(ts)
	return m.Sum(nil)[:16]
}

// Check reports whether nonce was issued by Issue, IssueTo or IssueFresh
// (or the same of an earlier version, without the connection's key) with the same secret and
// is still valid at now: ErrNonceInvalid for a forged or malformed nonce
// or one stamped in the future, ErrNonceStale for one older than the TTL.
func (n *Nonces) Check(nonce string, now time.Time) error {
	raw, err := hex.DecodeString(nonce)
	if err != nil || (len(raw) != 32 && len(raw) != 24) { // 24: without the connection's key
		return ErrNonceInvalid
	}
	if signed := len(raw) - 16; !hmac.Equal(raw[signed:], n.mac(raw[:signed])) {
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
