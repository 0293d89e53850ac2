package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"vodcluster/acm/boss"
	"vodcluster/proto/token"
	v1 "vodcluster/proto/vodcluster/v1"
)

// The manager section's keys reach the manager: the admin token guards
// the Admin API (a call without it is UNAUTHENTICATED, with it served),
// and the per-user session, request and login limits and the store
// timeout are the configured ones.
func TestManagerConfigWiring(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const admin = "admin-token-of-some-length"
	secret := write("secret", strings.Repeat("ab", 32)+"\n")
	tokenFile := write("admin-token", admin+"\n")
	if _, err := runUser(t, "pw\n", "alice", "--file", filepath.Join(dir, "users.yaml")); err != nil {
		t.Fatal(err)
	}
	cfg := write("manager.yaml", fmt.Sprintf(`manager:
  rtsp_listen: 127.0.0.1:0
  http_listen: 127.0.0.1:0
  grpc_listen: 127.0.0.1:0
  data_dir: %s
  origin: 127.0.0.1:1
  secret_file: %s
  users_file: %s
  admin_token_file: %s
  max_sessions_per_user: 3
  login_failures: 4
  login_failures_per_user: -1
  login_failure_refill: 1m
  requests_per_user: 5
  request_refill: 2s
  restore_grace: 45s
  store_timeout: 1500ms
  storage:
    first_plan_wait: 90s
`, filepath.Join(dir, "data"), secret, filepath.Join(dir, "users.yaml"), tokenFile))
	c, err := loadConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newManager(c.Manager)
	if err != nil {
		t.Fatal(err)
	}
	m := p.Manager
	if m.AdminToken != admin || m.MaxSessionsPerUser != 3 || m.LoginFailures != 4 || m.LoginFailuresPerUser != -1 || m.LoginFailureRefill.Minutes() != 1 || m.RestoreGrace.Seconds() != 45 ||
		m.RequestsPerUser != 5 || m.RequestRefill.Seconds() != 2 || m.StoreTimeout != 1500*time.Millisecond || m.FirstPlanWait != 90*time.Second {
		t.Fatalf("manager got admin token %q, max sessions %d, login failures %d every %v, title requests %d every %v, store timeout %v, first plan wait %v",
			m.AdminToken, m.MaxSessionsPerUser, m.LoginFailures, m.LoginFailureRefill, m.RequestsPerUser, m.RequestRefill, m.StoreTimeout, m.FirstPlanWait)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	call := func(opts ...grpc.DialOption) error {
		cc, err := grpc.NewClient(m.GRPCAddr(), append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		_, err = v1.NewAdminClient(cc).ListNodes(context.Background(), &v1.ListNodesRequest{})
		return err
	}
	if err := call(); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("admin call without the token: %v", err)
	}
	if err := call(grpc.WithPerRPCCredentials(token.Bearer(admin))); err != nil {
		t.Fatalf("admin call with the token: %v", err)
	}
}

// managerFiles writes, in a new temporary directory dir, a users file
// with alice (password pw) and a cluster secret.
func managerFiles(t *testing.T) (dir, users, secret string) {
	t.Helper()
	dir = t.TempDir()
	users = filepath.Join(dir, "users.yaml")
	secret = filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("ab", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runUser(t, "pw\n", "alice", "--file", users); err != nil {
		t.Fatal(err)
	}
	return dir, users, secret
}

// A subscriber added with `vodcluster user --file` while the manager runs
// is let in without a restart: the manager polls its users file (401
// before, then past authentication: 404 for a title the empty catalog
// does not hold).
func TestManagerSeesNewUsers(t *testing.T) {
	dir, users, secret := managerFiles(t)
	p, err := newManager(ManagerConfig{
		RTSPListen: "127.0.0.6:0", HTTPListen: "127.0.0.6:0", GRPCListen: "127.0.0.6:0",
		DataDir: filepath.Join(dir, "data"), SecretFile: secret, UsersFile: users,
		LoginFailures: -1, // the polls below fail until the reload
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	get := func(user, pw string) int {
		req, err := http.NewRequest("GET", "http://"+p.HTTPAddr()+"/vod/nothing.ts", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(user, pw)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if c := get("bob", "bob-pw"); c != http.StatusUnauthorized {
		t.Fatalf("bob before he is added: %d", c)
	}
	if _, err := runUser(t, "bob-pw\n", "bob", "--file", users); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(4 * boss.DefaultPollInterval)
	for i := 0; ; i++ {
		c := get("bob", "bob-pw")
		if c == http.StatusNotFound {
			break
		}
		if c != http.StatusUnauthorized || i > 400 || time.Now().After(deadline) {
			t.Fatalf("bob added to the users file: %d after %d tries", c, i)
		}
		time.Sleep(25 * time.Millisecond)
	}
	if c := get("alice", "pw"); c != http.StatusNotFound {
		t.Fatalf("alice after the reload: %d", c)
	}
}

// A redis_addr given as a URL with a password (redis://USER:PASS@HOST:PORT,
// a '/' in the password too) is refused at start naming the key and where
// the password goes, and no part of the password shows: the dial's error
// quoted it whole, twice. So a gRPC address given as a URL.
func TestRedisAddrURLRefusedWithoutPassword(t *testing.T) {
	for _, a := range []string{"redis://u:qj/kw@127.0.0.1:6379", "u:qjkw@127.0.0.1:6379", "redis://:qj%zzkw@127.0.0.1:6379/0"} {
		err := ManagerConfig{Store: StoreConfig{Backend: "redis", RedisAddr: a}}.validate()
		if err == nil || !strings.Contains(err.Error(), "store.redis_addr") || !strings.Contains(err.Error(), "redis_password") {
			t.Errorf("redis_addr %s: %v", a, err)
		} else if strings.Contains(err.Error(), "qj") || strings.Contains(err.Error(), "kw") {
			t.Errorf("redis_addr %s: the password shows: %v", a, err)
		}
	}
	if err := (ManagerConfig{Store: StoreConfig{Backend: "redis", RedisAddr: "127.0.0.1:6379"}}).validate(); err != nil {
		t.Errorf("redis_addr HOST:PORT refused: %v", err)
	}
	var k keyCheck
	k.grpcAddr("origin_addr", "grpc://op:qj/kw@127.0.0.1:9100", "the origin's grpc_listen")
	if err := k.err(); err == nil || strings.Contains(err.Error(), "qj") || strings.Contains(err.Error(), "kw") {
		t.Errorf("a gRPC address given as a URL: %v", err)
	}
}

// A redis_addr given as a unix:// URL is refused saying to give the
// socket's path alone, which works (go-redis dials a path beginning with
// '/' over a Unix socket): the refusal said only "want HOST:PORT". One
// given with a database number names redis_db.
func TestRedisAddrSocketURLNamesPath(t *testing.T) {
	err := ManagerConfig{Store: StoreConfig{Backend: "redis", RedisAddr: "unix:///run/redis/redis.sock"}}.validate()
	if err == nil || !strings.Contains(err.Error(), "its path alone (redis_addr: /run/redis/redis.sock)") {
		t.Errorf("redis_addr unix:///run/redis/redis.sock: %v", err)
	}
	err = ManagerConfig{Store: StoreConfig{Backend: "redis", RedisAddr: "redis://127.0.0.1:6379/2"}}.validate()
	if err == nil || !strings.Contains(err.Error(), "the database number in redis_db") {
		t.Errorf("redis_addr redis://127.0.0.1:6379/2: %v", err)
	}
	if err := (ManagerConfig{Store: StoreConfig{Backend: "redis", RedisAddr: "/run/redis/redis.sock"}}).validate(); err != nil {
		t.Errorf("redis_addr as a socket's path refused: %v", err)
	}
}

// A manager without admin_token_file whose gRPC port is reachable from
// other hosts does not start unless admin_api_open says to run it open:
// it started with a warning, and anyone reaching grpc_listen could end
// sessions, suspend subscribers and drain nodes with vodctl. On loopback
// it starts as before.
func TestManagerRefusesAnOpenAdminAPIOffLoopback(t *testing.T) {
	dir, users, secret := managerFiles(t)
	for _, c := range []struct {
		grpc string
		open bool
		ok   bool
	}{
		{"", false, false}, // the default, :9090
		{":0", false, false},
		{"0.0.0.0:0", false, false},
		{"[::]:0", false, false},
		{"192.0.2.1:9090", false, false},
		{":0", true, true},
		{"127.0.0.6:0", false, true},
		{"[::1]:0", false, true},
		{"localhost:0", false, true},
	} {
		p, err := newManager(ManagerConfig{
			RTSPListen: "127.0.0.6:0", HTTPListen: "127.0.0.6:0", GRPCListen: c.grpc, AdminAPIOpen: c.open,
			DataDir: filepath.Join(dir, "data"), SecretFile: secret, UsersFile: users,
		})
		if c.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), "admin_token_file is not set")) {
			t.Errorf("grpc_listen %q, admin_api_open %v: %v", c.grpc, c.open, err)
		}
		if p != nil {
			p.Close()
		}
	}
}

// A portal secret that is the cluster secret is refused: the portal could
// sign admission tokens for the nodes, and admission tokens (HS256 under
// the cluster secret, handed to every viewer in a node URL) verified as
// subscriber tokens, for any title and from any address. A hex cluster
// secret (openssl rand -hex 32, as the docs make it) is used decoded and
// the portal's as its text, but the file is the same secret: refused too
// (it was accepted).
func TestManagerRefusesThePortalSecretAsTheClusterSecret(t *testing.T) {
	dir, users, _ := managerFiles(t)
	text := filepath.Join(dir, "text-secret")
	os.WriteFile(text, []byte("a cluster secret that is not hex, 40 bytes\n"), 0o600)
	hexed := filepath.Join(dir, "hex-secret")
	os.WriteFile(hexed, []byte(strings.Repeat("ab", 32)+"\n"), 0o600)
	other := filepath.Join(dir, "portal")
	os.WriteFile(other, []byte("the portal's own secret of 32 bytes or more\n"), 0o600)
	for _, c := range []struct {
		cluster, portal string
		ok              bool
	}{{text, text, false}, {text, other, true}, {hexed, hexed, false}, {hexed, other, true}} {
		p, err := newManager(ManagerConfig{
			RTSPListen: "127.0.0.6:0", HTTPListen: "127.0.0.6:0", GRPCListen: "127.0.0.6:0",
			DataDir: filepath.Join(dir, "data"), SecretFile: c.cluster, UsersFile: users,
			SubscriberTokens: SubscriberTokensConfig{SecretFile: c.portal},
		})
		if c.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), "holds the cluster secret")) {
			t.Errorf("cluster %s, portal %s: %v", filepath.Base(c.cluster), filepath.Base(c.portal), err)
		}
		if p != nil {
			p.Close()
		}
	}
}
