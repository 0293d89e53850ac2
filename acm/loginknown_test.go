package acm

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// The known pairs survive a manager's restart (badger on disk): the
// subscribers' boxes, logging in again together after it, are not
// strangers to the address limit. A pair past knownPairTTL is not
// restored.
func TestKnownLoginsSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	e := newManager(t, dir, nil)
	e.startNode("n1", nodeOpts{})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("login: %d", res.StatusCode)
	}
	if !e.m.logins.isKnown("127.0.0.1", "demo", e.m.now()) {
		t.Fatal("a correct login did not make its pair known")
	}
	e.m.logins.mu.Lock()
	e.m.logins.noteKnownLocked("192.0.2.9\x00old", e.m.now().Add(-knownPairTTL-time.Hour))
	e.m.logins.mu.Unlock()
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	r := newManager(t, dir, nil)
	now := r.m.now()
	if !r.m.logins.isKnown("127.0.0.1", "demo", now) {
		t.Fatal("the known pair forgotten at the restart")
	}
	r.m.logins.mu.Lock()
	_, old := r.m.logins.known["192.0.2.9\x00old"]
	r.m.logins.mu.Unlock()
	if old || r.m.logins.isKnown("127.0.0.1", "other", now) {
		t.Fatal("an expired pair, or one never known, restored as known")
	}
}

// The table is saved only when it changed: a new pair, or a pair's login
// older than knownRefreshAfter logged in again; a login the day it was
// saved changes nothing. A table that does not decode, or holds a pair
// with no user name, restores nothing; a stored login later than now by
// more than a minute is not taken; a pair in both keeps the later login.
func TestKnownLoginsSnapshot(t *testing.T) {
	g := newLoginGuard(10, 30*time.Second)
	t0 := time.Unix(1_000_000, 0)
	if g.snapshotKnown(t0) != nil {
		t.Fatal("an empty, unchanged table saved")
	}
	guess(g, "10.0.0.1", "alice", t0, false)
	b := g.snapshotKnown(t0)
	var s savedKnownLogins
	if err := json.Unmarshal(b, &s); err != nil || len(s.Pairs) != 1 || s.Pairs[0] != (savedKnownPair{Addr: "10.0.0.1", User: "alice", At: t0.Unix()}) {
		t.Fatalf("snapshot %s (%v)", b, err)
	}
	guess(g, "10.0.0.1", "alice", t0.Add(time.Hour), false)
	if g.snapshotKnown(t0.Add(time.Hour)) != nil {
		t.Fatal("saved again for a login an hour after the saved one")
	}
	guess(g, "10.0.0.1", "alice", t0.Add(knownRefreshAfter+time.Hour), false)
	if g.snapshotKnown(t0.Add(knownRefreshAfter+time.Hour)) == nil {
		t.Fatal("a login a day after the saved one not saved")
	}

	r := newLoginGuard(10, 30*time.Second)
	for _, bad := range []string{`{"pairs":[{"addr":"10.0.0.1","user":"","at":1000000}]}`, `{"pairs":`, `[]`} {
		if n, err := r.restoreKnown([]byte(bad), t0); err == nil || n != 0 || len(r.known) != 0 {
			t.Fatalf("%s: restored %d, err %v", bad, n, err)
		}
	}
	guess(r, "10.0.0.2", "bob", t0.Add(time.Minute), false)
	stored := `{"pairs":[{"addr":"10.0.0.1","user":"alice","at":1000000},{"addr":"10.0.0.2","user":"bob","at":1000000},` +
		`{"addr":"10.0.0.3","user":"future","at":1900000}]}`
	if n, err := r.restoreKnown([]byte(stored), t0.Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("restored %d (%v), want alice only", n, err)
	}
	if at := r.known["10.0.0.2\x00bob"]; !at.Equal(t0.Add(time.Minute)) {
		t.Fatalf("bob's later login replaced by the stored one: %v", at)
	}
	if !r.isKnown("10.0.0.1", "alice", t0.Add(time.Minute)) || r.isKnown("10.0.0.3", "future", t0.Add(time.Minute)) {
		t.Fatal("alice not known, or a login from the future taken")
	}
}

// A box that logs in every hour has its pair saved about daily: compared
// with the login before it (an hour older), it was never saved again, and
// a restart more than knownPairTTL after its first login forgot it.
func TestKnownLoginsSavedForPairsLoggingInOften(t *testing.T) {
	g := newLoginGuard(10, 30*time.Second)
	t0 := time.Unix(1_000_000, 0)
	var last []byte
	var lastAt time.Time
	saves := 0
	for h := range 8 * 24 {
		now := t0.Add(time.Duration(h) * time.Hour)
		guess(g, "10.0.0.1", "alice", now, false)
		if b := g.snapshotKnown(now.Add(time.Minute)); b != nil { // a save every minute, as PopularitySave's
			last, lastAt = b, now
			saves++
		}
	}
	if saves < 7 || saves > 10 {
		t.Fatalf("%d saves in 8 days of hourly logins, want about one a day", saves)
	}
	end := t0.Add(8 * 24 * time.Hour)
	r := newLoginGuard(10, 30*time.Second)
	if n, err := r.restoreKnown(last, end); err != nil || n != 1 || !r.isKnown("10.0.0.1", "alice", end) {
		t.Fatalf("the last save (%v) restored %d pairs (%v) at %v", lastAt, n, err, end)
	}
}

// The log names the limit that refuses a login.
func TestLoginGuardSaysWhichLimit(t *testing.T) {
	g := newLoginGuard(2, 10*time.Second)
	t0 := time.Unix(1_000_000, 0)
	guess(g, "10.0.0.1", "alice", t0, true)
	guess(g, "10.0.0.1", "alice", t0, true)
	for i := range 20 {
		guess(g, "10.0.0.2", "u"+strconv.Itoa(i), t0, true)
		guess(g, "10.1.0."+strconv.Itoa(i+1), "bob", t0, true)
	}
	for _, c := range []struct{ ip, user, want string }{
		{"10.0.0.1", "alice", "pair"}, {"10.0.0.2", "carol", "address"}, {"10.2.0.1", "bob", "user"}, {"10.2.0.1", "dave", ""},
	} {
		if got := g.refusedBy(c.ip, c.user, t0); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.ip, c.user, got, c.want)
		}
	}
}

// A user name longer than maxUserKey is keyed by its hash: a flood of
// made-up names of kilobytes each holds small keys.
func TestLoginGuardKeysLongUserNamesByHash(t *testing.T) {
	g := newLoginGuard(10, 30*time.Second)
	t0 := time.Unix(1_000_000, 0)
	long := strings.Repeat("x", 4000)
	guess(g, "10.0.0.1", long, t0, false)
	if !g.isKnown("10.0.0.1", long, t0) || g.isKnown("10.0.0.1", long+"y", t0) {
		t.Fatal("a long user name not known after its login, or another taken for it")
	}
	for k := range g.known {
		if len(k) > 100 {
			t.Fatalf("a key of %d bytes", len(k))
		}
	}
	if userKey("alice") != "alice" || len(userKey(long)) != 33 {
		t.Fatalf("keys %q, %q", userKey("alice"), userKey(long))
	}
}
