package store

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"vodcluster/acm/store/redistest"
)

// The Redis's refusals of the credentials are told apart from its other
// failures (the manager names its settings for them): a password wanted
// (NOAUTH), or the username and password given refused (WRONGPASS).
func TestOpenRedisAuthErrors(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", "s3cret-pass")
	for name, c := range map[string]struct {
		o        RedisOptions
		required bool
	}{
		"wrong password": {RedisOptions{Addr: srv.Addr, Password: "wrong"}, false},
		"unknown user":   {RedisOptions{Addr: srv.Addr, Username: "bob", Password: "s3cret-pass"}, false},
		"no password":    {RedisOptions{Addr: srv.Addr}, true},
	} {
		_, err := OpenRedis(c.o)
		var ae *AuthError
		if !errors.As(err, &ae) || ae.Required != c.required || ae.Addr != srv.Addr {
			t.Errorf("%s: %v, want an AuthError (required %v)", name, err, c.required)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := ln.Addr().String()
	ln.Close()
	if _, err := OpenRedis(RedisOptions{Addr: closedAddr, DialTimeout: time.Second}); err == nil || errors.As(err, new(*AuthError)) {
		t.Errorf("nobody there: %v, want an error other than AuthError", err)
	}
}

// The Redis's password changed while the store is open (CONFIG SET
// requirepass; the connections it had are closed, as a restart with the
// new password would): a call's error has the *AuthError among its
// causes, so that the manager names its settings, its text still the
// call's.
func TestRedisCallAuthErrorAfterPasswordChange(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", "old-pass")
	r, err := OpenRedis(RedisOptions{Addr: srv.Addr, Password: "old-pass"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	admin := srv.Client(t)
	if err := admin.ConfigSet(ctx, "requirepass", "new-pass").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	err = r.PutSession(ctx, Session{ID: "s1"})
	var ae *AuthError
	if !errors.As(err, &ae) || ae.Required || ae.Addr != srv.Addr || !strings.HasPrefix(ae.Reply, "WRONGPASS") {
		t.Fatalf("a call after the password changed: %v, want an AuthError of %s (WRONGPASS)", err, srv.Addr)
	}
	if !strings.HasPrefix(err.Error(), "store: redis: put session s1: WRONGPASS") {
		t.Errorf("its text: %q", err)
	}
	if _, err := r.Session(ctx, "s1"); !errors.As(err, &ae) {
		t.Errorf("a read after the password changed: %v, want an AuthError", err)
	}
}
