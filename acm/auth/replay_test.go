package auth

import (
	"fmt"
	"testing"
	"time"
)

func TestReplaysAcceptEachResponseOnce(t *testing.T) {
	r := NewReplays(time.Minute, 0)
	if !r.First("n1", "aa", t0) {
		t.Fatal("first use refused")
	}
	if r.First("n1", "aa", t0.Add(30*time.Second)) {
		t.Fatal("the same nonce and response accepted twice within the TTL")
	}
	// Another nonce count (qop=auth) or request gives another response.
	if !r.First("n1", "bb", t0.Add(time.Second)) || !r.First("n2", "aa", t0.Add(time.Second)) {
		t.Fatal("a different response or nonce refused")
	}
	// Past the TTL (and the skew) the nonce itself is stale: forgotten.
	later := t0.Add(time.Minute + nonceSkew + time.Second)
	if !r.First("n1", "aa", later) {
		t.Fatal("a response remembered past the nonce TTL")
	}
	if n := r.Len(); n != 1 {
		t.Fatalf("%d remembered after the sweep, want 1 (the expired ones dropped)", n)
	}
}

func TestReplaysStayBounded(t *testing.T) {
	r := NewReplays(time.Minute, 100)
	for i := range 250 {
		if !r.First("n", fmt.Sprint(i), t0) {
			t.Fatalf("response %d refused", i)
		}
	}
	if n := r.Len(); n != 100 {
		t.Fatalf("%d remembered, want the cap 100", n)
	}
	if r.First("n", "5", t0) {
		t.Fatal("a remembered response accepted again at the cap")
	}
	// Once they expire, room is made again.
	if !r.First("n", "new", t0.Add(2*time.Minute)) || r.Len() != 1 {
		t.Fatalf("no room after expiry: %d", r.Len())
	}
}

func BenchmarkReplaysFirst(b *testing.B) {
	r := NewReplays(DefaultNonceTTL, 0)
	now := t0
	for i := range b.N {
		r.First("0000019a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e", fmt.Sprintf("%032x", i), now)
	}
}

// TestIssueFreshDiffersFromTheSecondsNonce: the nonce of a stale
// challenge is not the one Issue gives in the same second (a client
// refused for a used response would compute it again), and it checks.
func TestIssueFreshDiffersFromTheSecondsNonce(t *testing.T) {
	n := NewNonces([]byte("secret-0123456789abcdef"), 0)
	for _, at := range []time.Time{t0, t0.Add(time.Millisecond), t0.Add(999 * time.Millisecond)} {
		f := n.IssueFresh(at)
		if f == n.Issue(at) {
			t.Fatalf("at %v: the fresh nonce is the second's", at)
		}
		if err := n.Check(f, at); err != nil {
			t.Fatalf("at %v: fresh nonce refused: %v", at, err)
		}
	}
}

// TestIssueFreshNoncesAreDistinct: clients refused in the same
// millisecond (they had sent the same response) get distinct nonces.
func TestIssueFreshNoncesAreDistinct(t *testing.T) {
	n := NewNonces([]byte("secret-0123456789abcdef"), 0)
	seen := map[string]bool{}
	for range 50 {
		f := n.IssueFresh(t0)
		if seen[f] {
			t.Fatal("a fresh nonce issued twice")
		}
		seen[f] = true
		if err := n.Check(f, t0); err != nil {
			t.Fatalf("fresh nonce refused: %v", err)
		}
	}
}
