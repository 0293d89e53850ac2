package acm

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/proto/logtest"
)

// TestRefusedLoginsCollapsedInTheLog: a password guesser's wrong logins,
// and the logins refused once it ran out of them, each write their first
// line in full (user name, client address) and the rest at debug, counted
// in one line per window: a line per guess was a log an attacker could
// fill as fast as it sent requests.
func TestRefusedLoginsCollapsedInTheLog(t *testing.T) {
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		m.LoginFailures, m.LoginFailureRefill = 3, time.Hour
		m.Logger = slog.New(slog.NewTextHandler(&log, nil)) // info and above
	})
	e.startNode("n1", nodeOpts{})
	for i := range 20 {
		want := base.StatusServiceUnavailable // out of failed logins
		if i < 3 {
			want = base.StatusUnauthorized
		}
		if res := e.describe("user0", "guess"+strconv.Itoa(i), "t1"); res.StatusCode != want {
			t.Fatalf("guess %d: %d, want %d", i, res.StatusCode, want)
		}
	}
	failed := strings.Count(log.String(), `msg="authentication failed`)
	refused := strings.Count(log.String(), `msg="login refused: too many failed logins`)
	if failed != 1 || refused != 1 {
		t.Fatalf("%d lines of failed logins and %d of refused ones for 3 and 17, want 1 each:\n%s", failed, refused, log.String())
	}
	if !strings.Contains(log.String(), "user=user0 client=127.0.0.1") {
		t.Errorf("the first line names no user and client:\n%s", log.String())
	}
	e.m.capRefusals.flush(e.m.log, e.m.now().Add(capacityNote))
	if !strings.Contains(log.String(), "refused 16 requests for too many failed logins") ||
		!strings.Contains(log.String(), "refused 2 requests for wrong credentials") {
		t.Errorf("no count of the refusals held:\n%s", log.String())
	}
}
