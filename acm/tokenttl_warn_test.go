package acm

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"vodcluster/proto/logtest"
)

// TestTokenTTLLongerThanPauseTimeoutWarned: a node whose pause_timeout is
// shorter than the manager's token_ttl is registered with a warning that
// names both; one whose pause_timeout is longer, or unknown (an older
// node), is not.
func TestTokenTTLLongerThanPauseTimeoutWarned(t *testing.T) {
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		m.TokenTTL = 10 * time.Minute
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	e.startNode("short", nodeOpts{rtsp: "127.0.0.1:7001", pauseTimeout: 5 * time.Minute})
	e.startNode("long", nodeOpts{rtsp: "127.0.0.1:7002", pauseTimeout: time.Hour})
	e.startNode("older", nodeOpts{rtsp: "127.0.0.1:7003"})
	var warned []string
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, "token_ttl is longer than the node's pause_timeout") {
			warned = append(warned, line)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "level=WARN") ||
		!strings.Contains(warned[0], "node=short token_ttl=10m0s pause_timeout=5m0s") {
		t.Fatalf("warnings %q, want one, at warn, for node short with token_ttl=10m0s pause_timeout=5m0s", warned)
	}
}
