package main

import (
	"errors"
	"testing"

	"vodcluster/acm/store"
	"vodcluster/acm/store/redistest"
)

// A manager whose Redis refuses its credentials is told which settings
// give them, with "store" said once: it read "manager store: store:
// redis ADDR: WRONGPASS invalid username-password pair …" and named no
// setting.
func TestStoreOpenCredentialsRefused(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", "s3cret-pass")
	redis := func(user, password string) ManagerConfig {
		return ManagerConfig{Store: StoreConfig{Backend: store.BackendRedis, RedisAddr: srv.Addr, RedisUsername: user, RedisPassword: password}}
	}
	for name, c := range map[string]struct {
		conf ManagerConfig
		want string
	}{
		"wrong password": {redis("", "wrong"), "manager store: redis " + srv.Addr + " refused the username and password (WRONGPASS invalid username-password pair or user is disabled.): " +
			"check store.redis_password, and store.redis_username (an ACL user; leave it out for the default user, whose password is the Redis's requirepass)"},
		"unknown user": {redis("bob", "s3cret-pass"), "manager store: redis " + srv.Addr + " refused the username and password (WRONGPASS invalid username-password pair or user is disabled.): " +
			"check store.redis_password, and store.redis_username (an ACL user; leave it out for the default user, whose password is the Redis's requirepass)"},
		"no password": {redis("", ""), "manager store: redis " + srv.Addr + " requires a password (NOAUTH Authentication required.): " +
			"set store.redis_password (the Redis's requirepass, or with store.redis_username an ACL user's password)"},
	} {
		st, err := openStore(c.conf)
		if err == nil {
			st.Close()
			t.Errorf("%s: opened", name)
			continue
		}
		var ae *store.AuthError
		if err.Error() != c.want || !errors.As(err, &ae) {
			t.Errorf("%s:\n got %q\nwant %q", name, err, c.want)
		}
	}
	st, err := openStore(redis("", "s3cret-pass"))
	if err != nil {
		t.Fatalf("the right password: %v", err)
	}
	st.Close()
}

// Other errors of opening the store say "store" once too.
func TestStoreOpenErrorOnePrefix(t *testing.T) {
	_, err := openStore(ManagerConfig{Store: StoreConfig{Backend: store.BackendRedis}})
	if err == nil || err.Error() != "manager store: redis: empty address" {
		t.Errorf("no address: %v", err)
	}
}
