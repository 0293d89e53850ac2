package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"vodcluster/cdp/samples"
	"vodcluster/cmd/internal/probe"
	"vodcluster/proto/grpctls"
	"vodcluster/proto/grpctls/grpctlstest"
	"vodcluster/proto/token"
	v1 "vodcluster/proto/vodcluster/v1"
)

// An origin, a manager and a node built from their configuration
// sections with TLS on every gRPC link (node → manager, manager and node
// → origin, an operator → Admin): the catalog comes over TLS, the node
// registers over TLS, a viewer plays a title the node fills over TLS, and
// an Admin call needs the manager's CA. A node that dials the manager in
// plaintext never registers.
func TestTLSBetweenProcesses(t *testing.T) {
	dir := t.TempDir()
	originPKI, err := grpctlstest.Write(dir, "origin-", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	managerPKI, err := grpctlstest.Write(dir, "manager-", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secret := write("secret", strings.Repeat("cd", 32))
	const admin = "tls-admin-token-0123456789"
	adminFile := write("admin-token", admin)
	if _, err := runUser(t, "pw\n", "alice", "--file", filepath.Join(dir, "users.yaml")); err != nil {
		t.Fatal(err)
	}
	titles := filepath.Join(dir, "titles")
	if err := samples.WriteTo(titles); err != nil {
		t.Fatal(err)
	}
	load := func(body string) *Config {
		t.Helper()
		c, err := loadConfig(write("config.yaml", body))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	c := load(fmt.Sprintf("cdp:\n  dir: %s\n  listen: 127.0.0.1:0\n  tls_cert_file: %s\n  tls_key_file: %s\n",
		titles, originPKI.Cert, originPKI.Key))
	origin, err := newCDP(c.CDP)
	if err != nil {
		t.Fatal(err)
	}
	if err := origin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { origin.Close() })

	c = load(fmt.Sprintf(`manager:
  rtsp_listen: 127.0.0.1:0
  http_listen: 127.0.0.1:0
  grpc_listen: 127.0.0.1:0
  data_dir: %s
  origin: %s
  origin_tls_ca_file: %s
  grpc_tls_cert_file: %s
  grpc_tls_key_file: %s
  secret_file: %s
  users_file: %s
  admin_token_file: %s
  scheduler:
    heartbeat_interval: 200ms
`, filepath.Join(dir, "manager"), origin.Addr(), originPKI.CA, managerPKI.Cert, managerPKI.Key,
		secret, filepath.Join(dir, "users.yaml"), adminFile))
	mp, err := newManager(c.Manager)
	if err != nil {
		t.Fatal(err)
	}
	if err := mp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mp.Close() })
	m := mp.Manager

	nodeConfig := func(id, tlsKeys string) NodeConfig {
		c := load(fmt.Sprintf(`node:
  id: %s
  data_dir: %s
  rtsp_listen: 127.0.0.1:0
  http_listen: 127.0.0.1:0
  advertise_host: 127.0.0.1
  manager: %s
  origin: %s
  secret_file: %s
  disk_bytes: 67108864
%s`, id, filepath.Join(dir, id), m.GRPCAddr(), origin.Addr(), secret, tlsKeys))
		return c.Node
	}
	n, err := newNode(nodeConfig("node-tls", fmt.Sprintf("  manager_tls_ca_file: %s\n  origin_tls: true\n  origin_tls_ca_file: %s\n",
		managerPKI.CA, originPKI.CA)))
	if err != nil {
		t.Fatal(err)
	}
	n.HeartbeatInterval = 200 * time.Millisecond
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	plain, err := newNode(nodeConfig("node-plain", ""))
	if err != nil {
		t.Fatal(err)
	}
	plain.HeartbeatInterval = 200 * time.Millisecond
	if err := plain.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close() })

	// The operator's Admin client, over TLS with the manager's CA.
	creds, err := grpctls.Client(true, managerPKI.CA)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(m.GRPCAddr(), grpc.WithTransportCredentials(creds), grpc.WithPerRPCCredentials(token.Bearer(admin)))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	adm := v1.NewAdminClient(cc)
	listed := func() (titles int, nodes []string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		tl, err := adm.ListTitles(ctx, &v1.ListTitlesRequest{})
		if err != nil {
			t.Fatalf("ListTitles over TLS: %v", err)
		}
		nl, err := adm.ListNodes(ctx, &v1.ListNodesRequest{})
		if err != nil {
			t.Fatalf("ListNodes over TLS: %v", err)
		}
		for _, x := range nl.Nodes {
			nodes = append(nodes, x.NodeId)
		}
		return len(tl.Titles), nodes
	}
	eventually(t, 15*time.Second, "the catalog over TLS and node-tls registered over TLS", func() bool {
		titles, nodes := listed()
		return titles > 0 && len(nodes) == 1 && nodes[0] == "node-tls"
	})

	// sample-001 is on no node: node-tls fills it from the origin over
	// TLS while the viewer plays.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := probe.Play(ctx, "rtsp://alice:pw@"+m.RTSPAddr()+"/vod/sample-001", probe.Options{Duration: 2 * time.Second})
	if err != nil {
		t.Fatalf("play: %v", err)
	}
	if res.VideoFrames < 25 {
		t.Fatalf("play: %s, want at least a second of video", res)
	}
	if _, nodes := listed(); len(nodes) != 1 {
		t.Fatalf("nodes %v: the plaintext node must not register with a TLS manager", nodes)
	}
}

// TLS keys given half or pointing at the wrong files stop the process at
// start with an error naming the keys.
func TestTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	pki, err := grpctlstest.Write(dir, "", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("ab", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := newCDP(CDPConfig{TLSCert: pki.Cert}); err == nil || !strings.Contains(err.Error(), "tls_cert_file and tls_key_file go together") {
		t.Errorf("cdp with a certificate and no key: %v", err)
	}
	if _, err := newCDP(CDPConfig{TLSCert: pki.Cert, TLSKey: pki.CA}); err == nil || !strings.Contains(err.Error(), "tls_cert_file/tls_key_file") {
		t.Errorf("cdp with a key file that holds a certificate: %v", err)
	}
	if _, err := newNode(NodeConfig{SecretFile: secret, ManagerTLSCA: pki.Key}); err == nil || !strings.Contains(err.Error(), "manager_tls_ca_file") {
		t.Errorf("node with a CA file that holds a key: %v", err)
	}
	if _, err := newNode(NodeConfig{SecretFile: secret, OriginTLSCA: filepath.Join(dir, "none")}); err == nil || !strings.Contains(err.Error(), "origin_tls_ca_file") {
		t.Errorf("node with a missing origin CA file: %v", err)
	}
	if _, err := newManager(ManagerConfig{SecretFile: secret, UsersFile: secret, GRPCTLSKey: pki.Key}); err == nil ||
		!strings.Contains(err.Error(), "grpc_tls_cert_file and grpc_tls_key_file") {
		t.Errorf("manager with a key and no certificate: %v", err)
	}
	if _, err := newManager(ManagerConfig{SecretFile: secret, UsersFile: secret, HTTPTLSCert: pki.Cert}); err == nil ||
		!strings.Contains(err.Error(), "http_tls_cert_file and http_tls_key_file") {
		t.Errorf("manager with an HTTPS certificate and no key: %v", err)
	}
	if _, err := newNode(NodeConfig{SecretFile: secret, HTTPTLSCert: pki.Cert, HTTPTLSKey: pki.CA}); err == nil ||
		!strings.Contains(err.Error(), "http_tls_cert_file/http_tls_key_file") {
		t.Errorf("node with an HTTPS key file that holds a certificate: %v", err)
	}
	if _, err := newManager(ManagerConfig{SecretFile: secret, UsersFile: secret, RTSPTLSCert: pki.Cert}); err == nil ||
		!strings.Contains(err.Error(), "rtsp_tls_cert_file and rtsp_tls_key_file") {
		t.Errorf("manager with an RTSPS certificate and no key: %v", err)
	}
	if _, err := newManager(ManagerConfig{SecretFile: secret, UsersFile: secret, RTSPSListen: ":8322"}); err == nil ||
		!strings.Contains(err.Error(), "rtsps_listen :8322: needs rtsp_tls_cert_file and rtsp_tls_key_file") {
		t.Errorf("manager with rtsps_listen and no certificate: %v", err)
	}
	if _, err := newNode(NodeConfig{SecretFile: secret, RTSPSListen: ":8323"}); err == nil ||
		!strings.Contains(err.Error(), "rtsps_listen :8323: needs rtsp_tls_cert_file and rtsp_tls_key_file") {
		t.Errorf("node with rtsps_listen and no certificate: %v", err)
	}
	users := filepath.Join(deployConfigDirs[0], "users.yaml")
	m, err := newManager(ManagerConfig{SecretFile: secret, UsersFile: users, DataDir: t.TempDir(), RTSPTLSCert: pki.Cert, RTSPTLSKey: pki.Key, AdminAPIOpen: true})
	if err != nil || m.RTSPTLS == nil || m.RTSPSListen != ":8322" {
		t.Errorf("manager with an RTSPS certificate: %v; %+v", err, m)
	}
	n, err := newNode(NodeConfig{SecretFile: secret, RTSPTLSCert: pki.Cert, RTSPTLSKey: pki.Key})
	if err != nil || n.RTSPTLS == nil || n.RTSPSListen != ":8323" {
		t.Errorf("node with an RTSPS certificate: %v; %+v", err, n)
	}
}

// manager.sites and node site reach the manager and the node; a prefix
// that is not CIDR is refused naming the site.
func TestSitesConfig(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("ab", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := newManager(ManagerConfig{SecretFile: secret, UsersFile: secret, Sites: []SiteConfig{{Name: "north", Clients: []string{"10.0.0.0/33"}}}}); err == nil ||
		!strings.Contains(err.Error(), `"north"`) || !strings.Contains(err.Error(), "10.0.0.0/33") {
		t.Errorf("a bad prefix: %v", err)
	}
	got, err := sites([]SiteConfig{{Name: "north", Clients: []string{"10.0.0.0/8", "2001:db8::/32"}}})
	if err != nil || len(got) != 1 || len(got[0].Clients) != 2 || got[0].Clients[1].Bits() != 32 {
		t.Fatalf("sites: %+v %v", got, err)
	}
	n, err := newNode(NodeConfig{ID: "n1", DataDir: dir, SecretFile: secret, Site: "north"})
	if err != nil || n.Site != "north" {
		t.Fatalf("node site: %v %v", n, err)
	}
}
