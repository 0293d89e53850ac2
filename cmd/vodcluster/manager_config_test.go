package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"vodcluster/proto/token"
	v1 "vodcluster/proto/vodcluster/v1"
)

// The manager section's keys reach the manager: the admin token guards
// the Admin API (a call without it is UNAUTHENTICATED, with it served),
// and the per-user and login limits are the configured ones.
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
  login_failure_refill: 1m
  restore_grace: 45s
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
	if m.AdminToken != admin || m.MaxSessionsPerUser != 3 || m.LoginFailures != 4 || m.LoginFailureRefill.Minutes() != 1 || m.RestoreGrace.Seconds() != 45 {
		t.Fatalf("manager got admin token %q, max sessions %d, login failures %d every %v",
			m.AdminToken, m.MaxSessionsPerUser, m.LoginFailures, m.LoginFailureRefill)
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
