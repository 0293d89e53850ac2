package store

import (
	"errors"
	"net"
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
