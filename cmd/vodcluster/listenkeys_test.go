package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// A port another process holds stops a process at start with an error
// naming the file, the line and the key that gave it, as the other
// configuration errors do: the node said "vodnode: listen udp
// 127.0.0.1:6971: bind: address already in use" for its rtp_port (RTCP
// on the next port), and nothing about which key to change; then, the
// key named, no line, and the component's prefix inside ("--config F:
// rtsp_listen ...: vodnode: rtsp listen: listen tcp ...").
func TestListenInUseNamesKey(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("ab", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(dir, "users.yaml")
	if err := os.WriteFile(users, []byte("realm: vodcluster\nusers: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	taken := tcp.Addr().String()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	rtp := udp.LocalAddr().(*net.UDPAddr).Port
	rtp -= rtp % 2 // the port held is the RTP port or, odd, its RTCP port

	node := func(i int, extra string) string {
		return fmt.Sprintf("node:\n  id: n%d\n  data_dir: %s\n  advertise_host: 127.0.0.1\n  manager: 127.0.0.1:1\n  origin: 127.0.0.1:1\n  secret_file: %s\n%s",
			i, filepath.Join(dir, fmt.Sprint("data", i)), secret, extra)
	}
	for i, c := range []struct {
		cmd  *cobra.Command
		body string
		key  string // at its line, as written
	}{
		{nodeCmd(), node(0, fmt.Sprintf("  rtsp_listen: %q\n  http_listen: 127.0.0.1:0\n", taken)), "line 8: rtsp_listen " + taken},
		{nodeCmd(), node(1, fmt.Sprintf("  rtsp_listen: 127.0.0.1:0\n  http_listen: 127.0.0.1:0\n  rtp_port: %d\n", rtp)), fmt.Sprintf("line 10: rtp_port %d", rtp)},
		{nodeCmd(), node(2, fmt.Sprintf("  rtsp_listen: 127.0.0.1:0\n  http_listen: 127.0.0.1:0\n  metrics_listen: %q\n", taken)), "line 10: metrics_listen " + taken},
		{cdpCmd(), fmt.Sprintf("cdp:\n  dir: %s\n  listen: %q\n", dir, taken), "line 3: listen " + taken},
		{managerCmd(), fmt.Sprintf("manager:\n  rtsp_listen: 127.0.0.1:0\n  http_listen: %q\n  grpc_listen: 127.0.0.1:0\n  data_dir: %s\n  secret_file: %s\n  users_file: %s\n",
			taken, filepath.Join(dir, "manager"), secret, users), "line 3: http_listen " + taken},
	} {
		f, err := runConfigCmd(t, dir, i, c.cmd, c.body)
		if err == errStillRunning {
			t.Fatalf("%s runs (20 s) on a port another process holds (%s)", c.cmd.Name(), c.key)
		}
		// The listen error right after the key: no "vodnode: rtsp
		// listen: ", "acm: http: ", "cdp: " in between.
		want := "--config " + f + ": " + c.key + ": listen "
		if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, syscall.EADDRINUSE) {
			t.Errorf("%s, %s taken: %v\nwant %q ... address already in use", c.cmd.Name(), c.key, err, want)
		}
	}
}

// A file or directory a configuration names that is not there stops the
// process naming the configuration file and the key: the origin said
// "cdp: catalog directory: stat /x: no such file or directory" (no key,
// no file), a node "secret_file: open /x: ..." without the file.
func TestMissingPathNamesConfig(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		cmd  *cobra.Command
		body string
		want string
	}{
		{cdpCmd(), fmt.Sprintf("cdp:\n  dir: %s\n  listen: 127.0.0.1:0\n", missing), "dir " + missing + ": no such file or directory"},
		{cdpCmd(), fmt.Sprintf("cdp:\n  dir: %s\n  listen: 127.0.0.1:0\n", plain), "dir " + plain + ": not a directory"},
		{nodeCmd(), fmt.Sprintf("node:\n  id: n1\n  data_dir: %s\n  rtsp_listen: 127.0.0.1:0\n  http_listen: 127.0.0.1:0\n  secret_file: %s\n",
			filepath.Join(dir, "data"), missing), "secret_file"},
	} {
		f, err := runConfigCmd(t, dir, i, c.cmd, c.body)
		if err == errStillRunning {
			t.Fatalf("%s runs (20 s) without %s", c.cmd.Name(), c.want)
		}
		want := "--config " + f + ": " + c.want
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant %q", c.cmd.Name(), err, want)
		}
	}
}

// errStillRunning is runConfigCmd's answer for a command that did not
// stop within 20 s.
var errStillRunning = errors.New("still running after 20 s")

// runConfigCmd writes body to DIR/cI.yaml and runs cmd with --config on
// it, returning the file's path and the command's error, errStillRunning
// when it is still running after 20 s (a process that should have
// stopped at start).
func runConfigCmd(t *testing.T, dir string, i int, cmd *cobra.Command, body string) (string, error) {
	t.Helper()
	f := filepath.Join(dir, fmt.Sprintf("c%d.yaml", i))
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.SetArgs([]string{"--config", f})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()
	select {
	case err := <-done:
		return f, err
	case <-time.After(20 * time.Second):
		return f, errStillRunning
	}
}

// A port of up's flags another process holds stops up naming the flag,
// as its other flag errors do: it said "manager: acm: grpc: listen tcp
// 127.0.0.1:N: bind: address already in use", the manager's prefixes
// and no flag.
func TestUpListenInUseNamesFlag(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	port := held.Addr().(*net.TCPAddr).Port
	for _, flag := range []string{"rtsp-port", "http-port", "grpc-port", "metrics-port"} {
		args := map[string]string{"rtsp-port": "0", "http-port": "0", "grpc-port": "0", "metrics-port": "-1"}
		args[flag] = fmt.Sprint(port)
		cmd := upCmd()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SilenceUsage = true
		cmd.SetArgs([]string{"--data-dir", t.TempDir(), "--quiet", "--nodes", "1",
			"--rtsp-port", args["rtsp-port"], "--http-port", args["http-port"], "--grpc-port", args["grpc-port"], "--metrics-port", args["metrics-port"]})
		done := make(chan error, 1)
		go func() { done <- cmd.Execute() }()
		select {
		case err := <-done:
			want := fmt.Sprintf("up: --%s %d: listen tcp 127.0.0.1:%d: bind: address already in use", flag, port, port)
			if err == nil || err.Error() != want {
				t.Errorf("--%s held: %v, want %q", flag, err, want)
			}
			if !errors.Is(err, syscall.EADDRINUSE) {
				t.Errorf("--%s held: %v does not wrap EADDRINUSE", flag, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("--%s held: up still running after 30 s", flag)
		}
	}
}
