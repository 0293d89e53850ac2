package acm

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestNewTokenDoesNotWaitForTheStore: the same viewer asking again
// before it reaches its node gets its new token while the store stalls
// (the write of the new token's time held the redirect up to
// store_timeout, and a write that failed was not made again), and that
// time is written once the store answers.
func TestNewTokenDoesNotWaitForTheStore(t *testing.T) {
	const httpAddr = "127.0.0.1:7080"
	e, g, r := gatedManager(t, 30*time.Second, func(m *Manager) { m.StoreTimeout = 30 * time.Second })
	e.startNode("n1", nodeOpts{http: httpAddr})
	ask := func() *http.Response { return e.get("GET", "/vod/t1.ts", "demo", "demo") }
	res := ask()
	if res.StatusCode != http.StatusFound {
		t.Fatalf("first request: %d, want 302", res.StatusCode)
	}
	sid := e.tokenOf(res.Header.Get("Location"), "http", httpAddr, "t1", ".ts").Session
	// The stored token time: the admission's when token_at is unset.
	tokenAt := func() time.Time {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s, err := r.Session(ctx, sid)
		if err != nil {
			return time.Time{}
		}
		if s.TokenAt.IsZero() {
			return s.AdmittedAt
		}
		return s.TokenAt
	}
	first := tokenAt()
	if first.IsZero() {
		t.Fatalf("session %s not stored at its admission", sid)
	}
	g.shut()
	t.Cleanup(g.open)
	answered := make(chan *http.Response, 1)
	go func() { answered <- ask() }()
	select {
	case res := <-answered:
		if res.StatusCode != http.StatusFound {
			t.Fatalf("the same viewer again during the stall: %d, want 302", res.StatusCode)
		}
		if c := e.tokenOf(res.Header.Get("Location"), "http", httpAddr, "t1", ".ts"); c.Session != sid {
			t.Fatalf("the same viewer again: token of session %s, want its session %s", c.Session, sid)
		}
	case <-time.After(10 * time.Second):
		select {
		case call := <-g.entered:
			t.Fatalf("the same viewer's new token waited for the stalled store (store_timeout 30 s): %s hangs", call)
		default:
		}
		t.Fatal("the same viewer's new token waited for the stalled store (store_timeout 30 s)")
	}
	g.open()
	e.m.noteStall() // the health check reads the store now: it answers
	waitFor(t, 10*time.Second, "the new token's time written", func() bool { return tokenAt().After(first) })
}
