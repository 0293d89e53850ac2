package acm

import (
	"log/slog"
	"regexp"
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
	// Another subscriber behind the same address mistypes twice: its
	// failures are held in the same window, and named in its summary.
	for i := range 2 {
		if res := e.describe("kid", "typo"+strconv.Itoa(i), "t1"); res.StatusCode != base.StatusUnauthorized {
			t.Fatalf("kid's typo %d: %d, want 401", i, res.StatusCode)
		}
	}
	failed := strings.Count(log.String(), `msg="authentication failed`)
	refused := strings.Count(log.String(), `msg="login refused: too many failed logins`)
	if failed != 1 || refused != 1 {
		t.Fatalf("%d lines of failed logins and %d of refused ones for 5 and 17, want 1 each:\n%s", failed, refused, log.String())
	}
	if !strings.Contains(log.String(), "user=user0 client=127.0.0.1") {
		t.Errorf("the first line names no user and client:\n%s", log.String())
	}
	// The wait as an operator reads it ("1h", "28s"), not Go's
	// "59m59.999998s".
	if !regexp.MustCompile(`msg="login refused: too many failed logins[^\n]* retry_after=1h `).MatchString(log.String()) {
		t.Errorf("the refused line's retry_after is not rounded as durtext writes it:\n%s", log.String())
	}
	e.m.capRefusals.flush(e.m.log, e.m.now().Add(capacityNote))
	if !strings.Contains(log.String(), "refused 16 requests for too many failed logins from 127.0.0.1 in the last 10s") ||
		!strings.Contains(log.String(), "refused 4 requests for wrong credentials from 127.0.0.1 in the last 10s") ||
		!strings.Contains(log.String(), `users="[user0 kid]"`) {
		t.Errorf("no count of the refusals held, by client, with the users:\n%s", log.String())
	}
}

// TestRefusedLoginsCollapsedPerClient: the windows of refused logins are
// per client address: a guesser's flood from one address does not hold
// back the first line of another address's refusal, and its summary names
// the users refused; past maxRefusalWindows addresses at once, the others
// share one window.
func TestRefusedLoginsCollapsedPerClient(t *testing.T) {
	var buf logtest.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var r refusalNotes
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 600 { // one every 5 s from 10.0.0.1 for 50 minutes
		user := "guess" + strconv.Itoa(i%20)
		r.logFrom(l, t0.Add(time.Duration(i)*5*time.Second), refusedCredentials, "10.0.0.1", user, slog.LevelInfo, "authentication failed", "user", user, "client", "10.0.0.1")
	}
	r.logFrom(l, t0.Add(300*time.Second), refusedCredentials, "10.0.0.2", "kid", slog.LevelInfo, "authentication failed", "user", "kid", "client", "10.0.0.2")
	lines := infoLines(buf.String())
	kid := 0
	for _, line := range lines {
		if strings.Contains(line, "user=kid") && strings.Contains(line, "client=10.0.0.2") {
			kid++
		}
	}
	if kid != 1 {
		t.Fatalf("another address's failed login: %d lines above debug, want 1:\n%s", kid, strings.Join(lines, "\n"))
	}
	summary := ""
	for _, line := range lines {
		if strings.Contains(line, "refused 1 request for wrong credentials from 10.0.0.1 in the last 10s") {
			summary = line
			break
		}
	}
	if !strings.Contains(summary, "users=") || !strings.Contains(summary, "guess1") {
		t.Fatalf("no summary of the guesser's window naming its users:\n%s", strings.Join(lines[:min(len(lines), 5)], "\n"))
	}
	// A window lists maxWindowUsers names, and counts the others.
	var buf2 logtest.Buffer
	l = slog.New(slog.NewTextHandler(&buf2, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for i := range 20 {
		r.logFrom(l, t0.Add(time.Hour+time.Duration(i)*time.Millisecond), refusedLogins, "10.0.0.3", "u"+strconv.Itoa(i), slog.LevelWarn, "login refused")
	}
	r.flush(l, t0.Add(time.Hour+capacityNote))
	if !strings.Contains(buf2.String(), "refused 19 requests for too many failed logins from 10.0.0.3") || !strings.Contains(buf2.String(), "more_users=11") {
		t.Fatalf("summary of 19 users held:\n%s", buf2.String())
	}
	// Past maxRefusalWindows addresses at once, the others share a window.
	var buf3 logtest.Buffer
	l = slog.New(slog.NewTextHandler(&buf3, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var full int
	for i := range maxRefusalWindows + 100 {
		r.logFrom(l, t0.Add(2*time.Hour), refusedLogins, "10.1."+strconv.Itoa(i/256)+"."+strconv.Itoa(i%256), "u", slog.LevelWarn, "login refused")
	}
	full = len(infoLines(buf3.String()))
	if len(r.by) > maxRefusalWindows+1 || full > maxRefusalWindows+1 {
		t.Fatalf("%d windows and %d lines above debug for %d addresses, want at most %d", len(r.by), full, maxRefusalWindows+100, maxRefusalWindows+1)
	}
	if !strings.Contains(buf3.String(), "too many failed logins from other addresses") {
		t.Fatal("no shared window past the bound")
	}
}
