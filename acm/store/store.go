package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// ErrNotFound is returned (wrapped) for a session or a state that is not
// stored.
var ErrNotFound = errors.New("store: not found")

// ErrUndecodable is returned (wrapped) for a stored entry that is not the
// JSON of what it is stored as (a session, a title), or is that of
// another id than its key's: by Session and Titles, by a compare-and-set
// of a session (Locker: whose manager it is cannot be told), and as the
// Err of a session Sessions skipped. The store leaves the entry as is (an
// operator removes it: Skipped.Remove).
var ErrUndecodable = errors.New("store: stored entry does not decode")

// Skipped is a stored entry a listing (Sessions) left out because it does
// not decode (ErrUndecodable); the others are listed. The store leaves it
// as is: whose it is cannot be told.
type Skipped struct {
	// ID is the entry's id: its field in the Redis hash, its key after
	// the prefix in Badger.
	ID string
	// Remove is how an operator removes the entry, a command for the
	// store's own client ("HDEL <prefix>sessions <id>" for redis-cli);
	// "" when there is none (Badger: it stays, skipped at each listing).
	Remove string
	// Err tells why it does not decode; it wraps ErrUndecodable.
	Err error
}

// decodeSession decodes the stored entry b of session id. Errors (wrapping
// ErrUndecodable): b is not the JSON of a session, or of one of another
// id (JSON null, {}: no id).
func decodeSession(id string, b []byte) (Session, error) {
	var s Session
	if err := json.Unmarshal(b, &s); err != nil {
		return Session{}, fmt.Errorf("store: session %s: %w: %v", id, ErrUndecodable, err)
	}
	if s.ID != id {
		return Session{}, fmt.Errorf("store: session %s: %w: its id is %q", id, ErrUndecodable, s.ID)
	}
	return s, nil
}

// decodeTitle is decodeSession for the stored entry b of title id.
func decodeTitle(id string, b []byte) (Title, error) {
	var t Title
	if err := json.Unmarshal(b, &t); err != nil {
		return Title{}, fmt.Errorf("store: title %s: %w: %v", id, ErrUndecodable, err)
	}
	if t.ID != id {
		return Title{}, fmt.Errorf("store: title %s: %w: its id is %q", id, ErrUndecodable, t.ID)
	}
	return t, nil
}

// ErrClosed is returned (wrapped) by every call after Close.
var ErrClosed = errors.New("store: closed")

// Title is one catalog title as the manager keeps it.
type Title struct {
	ID         string  `json:"id"`                // catalog id, [A-Za-z0-9._-]{1,128}
	Name       string  `json:"name,omitempty"`    // human readable name
	DurationS  float64 `json:"duration_s"`        // play time, seconds
	BitrateBps int64   `json:"bitrate_bps"`       // mean bitrate, bit/s: what admission reserves
	SizeBytes  int64   `json:"size_bytes"`        // file size, bytes
	Package    string  `json:"package,omitempty"` // entitlement package
	// PopularityPerDay is the operator's hint of the title's demand,
	// expected requests per day; 0 = none.
	PopularityPerDay float64 `json:"popularity_per_day,omitempty"`
	// Version identifies the bytes of the title's file at the origin
	// (cdp.Title.Version, 32 hex digits); "" when the origin gives none.
	// A node's copy of another version is stale.
	Version string `json:"version,omitempty"`
}

// StateNamePattern is the shape of a PutState name.
var StateNamePattern = regexp.MustCompile(`^[a-z0-9_.-]{1,64}$`)

// Session states.
const (
	StateAdmitted = "admitted" // redirected to its node, not started there yet
	StatePlaying  = "playing"  // the node reported it started
	StateEnded    = "ended"    // over; its reservation is released
)

// Session protocols.
const (
	ProtoRTSP  = "rtsp"
	ProtoRTSPS = "rtsps" // RTSP over TLS (the RTSPS front door)
	ProtoHTTP  = "http"
)

// Session is one admission: a viewer's playback of one title on one node,
// with the bit/s reserved for it.
type Session struct {
	ID         string    `json:"id"`          // 128-bit random, 32 hex digits
	User       string    `json:"user"`        // subscriber
	Title      string    `json:"title"`       // title id
	Node       string    `json:"node"`        // node id it was placed on
	ClientAddr string    `json:"client_addr"` // client IP (and port) at admission
	BitrateBps int64     `json:"bitrate_bps"` // bit/s reserved
	Fill       bool      `json:"fill"`        // the placement ordered a fill from the origin
	State      string    `json:"state"`       // StateAdmitted, StatePlaying, StateEnded
	Protocol   string    `json:"protocol"`    // ProtoRTSP, ProtoRTSPS or ProtoHTTP
	AdmittedAt time.Time `json:"admitted_at"` // admission (a viewer's new token for the same session leaves it)
	StartedAt  time.Time `json:"started_at,omitzero"`
	// TokenAt is when the newest token of a viewer who asked the front
	// door again before reaching its node was signed; zero (and absent
	// from records written before it existed): only the admission's,
	// AdmittedAt. The no-show deadline counts from the later of the two,
	// also on a manager that loads the session (a restart, a takeover).
	TokenAt time.Time `json:"token_at,omitzero"`
	// Manager is, on a store shared by several managers, the one that
	// holds the session's reservation (its planner-lock holder id); a
	// manager deletes an orphaned session's entry only when it is its
	// own. Empty on a store of one manager.
	Manager string `json:"manager,omitempty"`
	// Digest identifies the stored entry a shared store (Redis) read the
	// session from: the SHA-1 (hex) of its bytes, set by Session and
	// Sessions, not stored. Locker's compare-and-set calls take it to act
	// on an entry unchanged since it was read. Empty from a store of one
	// manager (Badger), and for a session not read from the store.
	Digest string `json:"-"`
}

// Store is the manager's durable state. Implementations are safe for
// concurrent use; a call returns after the change is durable (on disk or
// acknowledged by the shared store). Every method fails with ErrClosed
// after Close, and with the context's error (wrapped) when its context
// is done before the call completes.
type Store interface {
	// PutSession inserts or replaces session s.ID.
	PutSession(ctx context.Context, s Session) error
	// DeleteSession removes session id; removing a missing one is not an error.
	DeleteSession(ctx context.Context, id string) error
	// Session returns session id, or an error wrapping ErrNotFound, or
	// ErrUndecodable for an entry that does not decode.
	Session(ctx context.Context, id string) (Session, error)
	// Sessions returns every stored session, in id order, and the
	// entries it skipped (in id order) because they do not decode: one
	// such entry (written by hand, say) does not keep the others from a
	// manager that loads them. Errors: the store's; no session then.
	Sessions(ctx context.Context) ([]Session, []Skipped, error)
	// ReplaceTitles makes titles the whole catalog: titles absent from it
	// are removed.
	ReplaceTitles(ctx context.Context, titles []Title) error
	// Titles returns the catalog, in id order. An entry that does not
	// decode fails it (ErrUndecodable, naming the title and how to remove
	// the entry): a title left out would silently be unknown (its viewers
	// refused as asking for an unknown title, the operator's stored
	// prefetch orders of it not queued again) until the origin answers.
	Titles(ctx context.Context) ([]Title, error)
	// PutState stores value under name: a piece of the manager's own
	// state other than sessions and the catalog (the operator's pins, the
	// popularity snapshot). name matches StateNamePattern. A write that
	// fails by ctx's deadline is not applied later (Redis: fenced by it).
	PutState(ctx context.Context, name string, value []byte) error
	// State returns the value stored under name, or an error wrapping
	// ErrNotFound.
	State(ctx context.Context, name string) ([]byte, error)
	// Close releases the store.
	Close() error
}

// Locker is implemented by a Store that several managers share (Redis):
// named locks with an expiry, each held by the holder that took it, which
// elect the one manager that does a job no two should do at once (the
// storage planner). A store of one manager (Badger) has no Locker: that
// manager holds every lock.
//
// A lock is a lease: it expires ttl after it was taken or last renewed,
// so a holder that dies loses it then. A holder must renew well within
// ttl and stop acting as the holder when a renewal fails and ttl has
// passed since the last successful one.
type Locker interface {
	// TryLock takes lock name for holder (a string unique to the caller)
	// for ttl when nobody holds it. It returns true when holder holds the
	// lock after the call (also when it already did), false when another
	// holder does. Errors: a name not matching StateNamePattern, an empty
	// holder, ttl under a millisecond, the store's errors.
	TryLock(ctx context.Context, name, holder string, ttl time.Duration) (bool, error)
	// TakeLock is TryLock telling also whether holder was the lock's last
	// holder before the call (kept: it held it all along, or takes it back
	// free with no other holder having taken it since this Locker was last
	// answered holder held it, also when the store lost its record of
	// holders, a Redis restarted without its data, since this Locker knew
	// holder held it: no holder took it since, or its tenure would be
	// recorded); kept is false when another held it since, when the
	// store cannot tell (this Locker never knew holder held it), and when
	// a take of holder's whose answer was lost (it timed out, and the
	// store ran it later) took the lock after another holder.
	// Errors: TryLock's.
	TakeLock(ctx context.Context, name, holder string, ttl time.Duration) (held, kept bool, err error)
	// RenewLock extends holder's lock name to ttl from now. It returns
	// false (and extends nothing) when holder does not hold it: it expired
	// or another holder took it.
	RenewLock(ctx context.Context, name, holder string, ttl time.Duration) (bool, error)
	// Unlock releases holder's lock name; it returns false (and releases
	// nothing) when holder does not hold it.
	Unlock(ctx context.Context, name, holder string) (bool, error)
	// LockHolder returns the holder of lock name now, "" when nobody
	// holds it (never taken, released, or its lease ran out). Errors: a
	// name not matching StateNamePattern, the store's errors.
	LockHolder(ctx context.Context, name string) (string, error)
	// DeleteSessionHeldBy removes session id in one atomic step when its
	// Manager is one of managers, or, unchanged not "", when the entry is
	// still the one read as a Session whose Digest is unchanged, whatever
	// its Manager (compare-and-delete: a manager deletes only a session
	// no other manager took over, or one it claimed from another manager
	// that did not rewrite it since). It returns whether it removed it;
	// false, nil when the session is missing or held by another manager.
	// Errors: an entry that is not a JSON session (ErrUndecodable; left
	// as is), the store's errors.
	DeleteSessionHeldBy(ctx context.Context, id, unchanged string, managers ...string) (bool, error)
	// PutSessionHeldBy writes s over its stored entry in one atomic step
	// when that entry's Manager is one of managers, or, unchanged not "",
	// when the entry is still the one read as a Session whose Digest is
	// unchanged (compare-and-set: a manager's late write does not take
	// back a session another manager took over, nor bring back one
	// another manager deleted, nor write its claim over an entry the
	// manager it claimed it from rewrote since). It returns whether it
	// wrote it; false, nil when the entry is missing or held by another
	// manager. Errors: s without an ID, an entry that is not a JSON
	// session (ErrUndecodable; left as is), the store's errors.
	PutSessionHeldBy(ctx context.Context, s Session, unchanged string, managers ...string) (bool, error)
}
