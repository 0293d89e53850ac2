package store

import (
	"strings"
	"testing"

	"vodcluster/acm/store/redistest"
)

func TestOpenBackends(t *testing.T) {
	for _, backend := range []string{"", BackendBadger} {
		s, err := Open(backend, t.TempDir(), RedisOptions{}, nil)
		if err != nil {
			t.Fatalf("%q: %v", backend, err)
		}
		if _, ok := s.(*Badger); !ok {
			t.Fatalf("%q: %T", backend, s)
		}
		s.Close()
	}
	srv := redistest.Start(t)
	s, err := Open(BackendRedis, "", RedisOptions{Addr: srv.Addr, Prefix: "p:"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := s.(*Redis); !ok || r.Prefix() != "p:" {
		t.Fatalf("redis backend: %T", s)
	}
	s.Close()
	for name, c := range map[string]struct {
		backend, dir string
		r            RedisOptions
		want         string
	}{
		"unknown":          {"etcd", t.TempDir(), RedisOptions{}, `backend "etcd"`},
		"badger, redis":    {BackendBadger, t.TempDir(), RedisOptions{Addr: srv.Addr}, "redis settings given"},
		"badger, no dir":   {"", "", RedisOptions{}, "empty data directory"},
		"redis, no addr":   {BackendRedis, "", RedisOptions{}, "empty address"},
		"redis, no server": {BackendRedis, "", RedisOptions{Addr: "127.0.0.1:1"}, "127.0.0.1:1"},
	} {
		s, err := Open(c.backend, c.dir, c.r, nil)
		if err == nil {
			s.Close()
			t.Errorf("%s: opened", name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to say %q", name, err, c.want)
		}
	}
}
