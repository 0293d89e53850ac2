package boss

import (
	"context"
	"crypto/sha256"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// waitBlockedOnSlot waits until n goroutines are blocked in Authenticate
// waiting for a bcryptSlots slot (so they have looked at the cache and missed),
// reading the goroutines' stacks for at most 10 s.
func waitBlockedOnSlot(t *testing.T, n int) {
	t.Helper()
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		stacks := string(buf[:runtime.Stack(buf, true)])
		blocked := 0
		for _, g := range strings.Split(stacks, "\n\n") {
			if strings.Contains(g, "[select") && strings.Contains(g, "boss.(*File).Authenticate") {
				blocked++
			}
		}
		if blocked >= n {
			return
		}
		runtime.Gosched()
	}
	t.Fatalf("fewer than %d checks waiting for a bcrypt slot after 10 s", n)
}

// A Basic check that waited for a bcrypt slot while a check of the same
// credential verified it needs no bcrypt of its own: a burst of one
// subscriber's requests (a household's boxes, a player's retries, the
// first logins after a restart) costs one comparison, not one each. The
// stored hash is changed while the check waits, so a comparison of its
// own would fail: the check must take the cached verification.
func TestBasicWaiterTakesConcurrentVerification(t *testing.T) {
	f := newTestFile(t)
	takeAllSlots()
	released := false
	release := func() {
		if !released {
			released = true
			releaseAllSlots()
		}
	}
	defer release()

	done := make(chan error, 1)
	go func() {
		done <- f.Authenticate(context.Background(), Credentials{User: "demo", Password: "demo"})
	}()
	waitBlockedOnSlot(t, 1)

	// Meanwhile a check of the same credential verified it (remember),
	// and the hash no longer matches "demo": only the cache can pass it.
	other, err := bcrypt.GenerateFromPassword([]byte("other"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	f.users["demo"].Bcrypt = string(other)
	f.remember(sha256.Sum256([]byte("demo\x00demo")), f.now())
	release()

	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("check that waited while the same credential was verified: %v, want it to take the verification (no bcrypt of its own)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("check still waiting 10 s after the slots were freed")
	}
	// A credential not verified meanwhile still gets its own comparison.
	if err := f.Authenticate(context.Background(), Credentials{User: "kid", Password: "wrong"}); err == nil {
		t.Fatal("wrong password accepted")
	}
}
