package auth

import (
	"fmt"
	"runtime"
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
	// At the cap the newest are remembered, the oldest forgotten: once
	// a flood had filled it, every response accepted after was taken
	// again (none recorded).
	if r.First("n", "249", t0) || r.First("n", "150", t0) {
		t.Fatal("a response accepted at the cap accepted again")
	}
	if !r.First("n", "5", t0) || r.Len() != 100 {
		t.Fatalf("the oldest response still remembered at the cap, or the cap passed: %d", r.Len())
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

// TestReplaysForgetInOrder: each response is forgotten its own TTL after
// it was accepted, not with those accepted before it.
func TestReplaysForgetInOrder(t *testing.T) {
	r := NewReplays(time.Minute, 2)
	r.First("n", "a", t0)
	r.First("n", "b", t0.Add(30*time.Second))
	at := t0.Add(time.Minute + nonceSkew)
	if r.First("n", "b", at) {
		t.Fatal("b, accepted 30 s after a, forgotten with a")
	}
	if r.Len() != 1 || !r.First("n", "a", at) {
		t.Fatalf("a not forgotten at its TTL (%d remembered)", r.Len())
	}
	if r.First("n", "a", at) || r.Len() != 2 {
		t.Fatalf("a, accepted again, not remembered (%d)", r.Len())
	}
}

// TestReplaysMemoryPerResponse: a remembered response takes about 100
// bytes (DefaultReplayCap's figure), whatever the length of the nonce and
// response strings: a subscriber who knows a password can fill a Replays
// with a million right answers (one per nonce count) in the nonce TTL.
func TestReplaysMemoryPerResponse(t *testing.T) {
	const n = 1 << 17
	nonce := "0000019a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e"
	responses := make([]string, n)
	for i := range responses {
		responses[i] = fmt.Sprintf("%032x", i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := NewReplays(time.Minute, 0)
	for _, resp := range responses {
		r.First(nonce, resp, t0)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if r.Len() != n {
		t.Fatalf("%d remembered, want %d", r.Len(), n)
	}
	if per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n; per > 110 {
		t.Fatalf("%d bytes per remembered response, want about 100 at most", per)
	}
	runtime.KeepAlive(responses)
}

// BenchmarkReplaysFirstAtCap: a response checked when the Replays is full
// and none has expired costs about what it does otherwise (no scan of the
// million remembered).
func BenchmarkReplaysFirstAtCap(b *testing.B) {
	r := NewReplays(DefaultNonceTTL, 0)
	nonce := "0000019a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e"
	for i := range DefaultReplayCap {
		r.First(nonce, fmt.Sprintf("%032x", i), t0)
	}
	b.ResetTimer()
	for i := range b.N {
		r.First(nonce, fmt.Sprintf("x%031x", i), t0.Add(time.Second))
	}
}
