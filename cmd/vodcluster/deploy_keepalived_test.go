package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"testing"
	"time"
)

// TestKeepalivedCheckScript: deploy/keepalived/check_manager.sh, run by
// keepalived every 2 s, passes while this host's manager is ready, fails
// (its host gives up the VIP) when this one is not (503, or not
// answering) and the other one is, and passes when neither is (the VIP
// and the nodes' links stay where they are: moving them helps no one).
// (keepalived.conf's weighted check with nopreempt never moved the VIP;
// without a weight, a check of this manager alone would have put both
// hosts in FAULT while their Redis was down, taking the VIP away.)
func TestKeepalivedCheckScript(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	healthz := func(code int) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
		}))
		t.Cleanup(s.Close)
		return s.URL + "/healthz"
	}
	ready, notReady := healthz(200), healthz(503)
	gone := httptest.NewServer(http.NotFoundHandler())
	down := gone.URL + "/healthz" // this manager's process gone: nothing answers
	gone.Close()
	for _, c := range []struct {
		this, other string
		pass        bool
	}{
		{ready, ready, true},
		{ready, notReady, true},
		{notReady, ready, false},
		{down, ready, false},
		{notReady, notReady, true},
		{notReady, "http://127.0.0.1:1/healthz", true}, // the other not answering either
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := exec.CommandContext(ctx, "sh", "../../deploy/keepalived/check_manager.sh", c.this, c.other).Run()
		cancel()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		if pass := err == nil; pass != c.pass {
			t.Errorf("this %s, other %s: passes %v, want %v", c.this, c.other, pass, c.pass)
		}
	}
}
