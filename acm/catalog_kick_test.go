package acm

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// msgHandler is a slog.Handler that sends each record's message whose
// text holds prefix to msgs (dropped when msgs is full).
type msgHandler struct {
	prefix string
	msgs   chan string
}

func (h msgHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h msgHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, h.prefix) {
		select {
		case h.msgs <- r.Message:
		default:
		}
	}
	return nil
}
func (h msgHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h msgHandler) WithGroup(string) slog.Handler      { return h }

// A manager started with its origin out of reach and no catalog reads
// the catalog as soon as its origin check finds the origin answering: its
// catalog loop backs off after failed reads (1 s, 2 s, 4 s, ... up to
// catalog_refresh), and the manager stayed not ready, refusing every title
// "no catalog yet: the origin has not been reached", until the loop's next
// read, up to catalog_refresh (1 min) after the origin came. Here the
// origin comes just after the loop's third failed read, whose next read is
// 4 s later: the catalog must be there well before.
func TestCatalogReadWhenOriginComes(t *testing.T) {
	addr := freeAddr(t)
	failed := make(chan string, 16)
	m := startBare(t, func(m *Manager) {
		m.OriginAddr, m.OriginCheck, m.CatalogRefresh = addr, 50*time.Millisecond, time.Hour
		m.Logger = slog.New(msgHandler{prefix: "catalog: refresh failed", msgs: failed})
	})
	for i := 0; i < 3; i++ { // after 1 s, 1 s and 2 s: the next wait is 4 s
		select {
		case <-failed:
		case <-time.After(10 * time.Second):
			t.Fatalf("catalog read %d did not fail", i+1)
		}
	}
	if !m.noCatalog() {
		t.Fatal("a catalog without an origin")
	}
	came := time.Now()
	startOrigin(t, addr, testTitles)
	deadline := came.Add(2 * time.Second)
	for m.noCatalog() {
		if time.Now().After(deadline) {
			t.Fatalf("no catalog %v after the origin came (the catalog loop's next read is 4 s after its last failure)", time.Since(came).Round(time.Millisecond))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, body := probe(t, m, "/healthz"); code != http.StatusOK {
		t.Fatalf("healthz with the catalog: %d %q", code, body)
	}
}
