package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm"
	v1 "vodcluster/proto/vodcluster/v1"
)

// vodctl node NODE shows a node the manager does not list by its stored
// setting: a manager restarted while the node is down had only NOT_FOUND
// ("not registered") for it, though vodctl node NODE --undrain could
// change that setting. Against a real manager, restarted on its data
// directory, and node; the show changes nothing: the node registering
// again gets the setting.
func TestNodeShowsTheStoredSettingOfANodeNotRegistered(t *testing.T) {
	dir := t.TempDir()
	origin := startOrigin(t, dir)
	run := func(m *acm.Manager, args ...string) (string, error) {
		t.Helper()
		cmd := newRoot()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"--manager", m.GRPCAddr(), "--token", ""}, args...))
		err := cmd.Execute()
		return out.String(), err
	}
	alive := func(admin v1.AdminClient) func() bool {
		return func() bool {
			r, err := admin.ListNodes(context.Background(), &v1.ListNodesRequest{})
			return err == nil && len(r.Nodes) == 1 && r.Nodes[0].Alive
		}
	}
	m, admin := startManager(t, dir, origin)
	n := startNode(t, dir, "node-1", m, origin)
	waitUntil(t, "node-1 alive", alive(admin))
	if out, err := run(m, "node", "node-1", "--drain", "--weight", "7", "--overload", "0.9"); err != nil {
		t.Fatalf("node node-1 --drain --weight 7 --overload 0.9: %v\n%s", err, out)
	}
	n.Close()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	m, admin = startManager(t, dir, origin) // node-1 down: not registered with it
	out, err := run(m, "node", "node-1")
	want := "node node-1: not registered with this manager (not reporting to it); stored setting, applied when it registers: draining true, weight 7, overload 0.90"
	if err != nil || strings.Join(strings.Fields(out), " ") != want {
		t.Fatalf("node node-1, not registered: %v\n%s\nwant\n%s", err, out, want)
	}
	js, err := run(m, "--json", "node", "node-1")
	var info map[string]any
	if err != nil || json.Unmarshal([]byte(js), &info) != nil {
		t.Fatalf("--json node node-1: %v\n%s", err, js)
	}
	if info["nodeId"] != "node-1" || info["draining"] != true || info["weight"] != 7.0 || info["weightStored"] != true ||
		info["overload"] != 0.9 || (info["rtspAddr"] != nil && info["rtspAddr"] != "") {
		t.Fatalf("--json node node-1, not registered:\n%s", js)
	}
	out, err = run(m, "node", "node-9")
	if status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), `"node-9" is not registered with the manager and has no stored setting`) || out != "" {
		t.Fatalf("node node-9, neither registered nor stored: %v\n%s", err, out)
	}

	startNode(t, dir, "node-1", m, origin)
	waitUntil(t, "node-1 alive again", alive(admin))
	out, err = run(m, "node", "node-1")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 3 || !strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "node-1 127.0.0.1:") ||
		lines[2] != "overload 0.90" {
		t.Fatalf("node node-1, registered again: %v\n%s", err, out)
	}
	r, err := admin.ListNodes(context.Background(), &v1.ListNodesRequest{})
	if err != nil || len(r.Nodes) != 1 || !r.Nodes[0].Draining || r.Nodes[0].Weight != 7 {
		t.Fatalf("node-1 registered again: %v %v, want draining, weight 7", r, err)
	}
}
