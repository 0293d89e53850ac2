package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"vodcluster/acm"
	"vodcluster/acm/boss"
	"vodcluster/cdp"
	"vodcluster/cdp/samples"
	"vodcluster/lsm"
	v1 "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
	"vodcluster/vodnode"
)

// startCluster starts on loopback an origin serving the sample titles, a
// manager (no storage planner: only the operator's orders fill) and one
// node, node-1, all stopped when the test ends; it returns the manager's
// gRPC address and an Admin client, once node-1 is alive.
func startCluster(t *testing.T) (string, v1.AdminClient) {
	t.Helper()
	dir := t.TempDir()
	origin := startOrigin(t, dir)
	m, admin := startManager(t, dir, origin)
	startNode(t, dir, "node-1", m, origin)
	waitUntil(t, "node-1 alive", func() bool {
		r, err := admin.ListNodes(context.Background(), &v1.ListNodesRequest{})
		return err == nil && len(r.Nodes) == 1 && r.Nodes[0].Alive
	})
	return m.GRPCAddr(), admin
}

var (
	testSecret = []byte("0123456789abcdef0123456789abcdef")
	quietLog   = slog.New(slog.NewTextHandler(io.Discard, nil))
)

// startOrigin starts on loopback an origin serving the sample titles from
// dir/cdp, closed when the test ends.
func startOrigin(t *testing.T, dir string) *cdp.Server {
	t.Helper()
	origin := &cdp.Server{Dir: filepath.Join(dir, "cdp"), Listen: "127.0.0.1:0", Logger: quietLog}
	if err := samples.WriteTo(origin.Dir); err != nil {
		t.Fatal(err)
	}
	if err := origin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { origin.Close() })
	return origin
}

// startManager starts on loopback a manager with its state in
// dir/manager (no storage planner: only the operator's orders fill),
// closed when the test ends, and returns it with an Admin client.
func startManager(t *testing.T, dir string, origin *cdp.Server) (*acm.Manager, v1.AdminClient) {
	t.Helper()
	return startManagerWith(t, dir, origin, nil)
}

// startManagerWith is startManager with configure, when not nil, setting
// the manager up further before it starts.
func startManagerWith(t *testing.T, dir string, origin *cdp.Server, configure func(*acm.Manager)) (*acm.Manager, v1.AdminClient) {
	t.Helper()
	users, err := boss.NewFile(acm.DefaultRealm, nil)
	if err != nil {
		t.Fatal(err)
	}
	sched := lsm.DefaultConfig()
	sched.HeartbeatInterval = 200 * time.Millisecond
	m := &acm.Manager{RTSPListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", GRPCListen: "127.0.0.1:0",
		DataDir: filepath.Join(dir, "manager"), OriginAddr: origin.Addr(), Secret: testSecret, BOSS: users,
		Scheduler: sched, StoragePlanner: smm.PlannerNone, Logger: quietLog}
	if configure != nil {
		configure(m)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	cc, err := grpc.NewClient(m.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return m, v1.NewAdminClient(cc)
}

// startNode starts on loopback node id, its state in dir/id, reporting to
// manager m; it is closed when the test ends.
func startNode(t *testing.T, dir, id string, m *acm.Manager, origin *cdp.Server) *vodnode.Node {
	t.Helper()
	n := &vodnode.Node{ID: id, DataDir: filepath.Join(dir, id), RTSPListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0",
		Capacity: vodnode.Capacity{EgressBps: 100_000_000, DiskBytes: 1 << 30}, ManagerAddr: m.GRPCAddr(),
		OriginAddr: origin.Addr(), Secret: testSecret, HeartbeatInterval: 200 * time.Millisecond, Logger: quietLog}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// waitUntil polls cond every 50 ms for up to 20 s, failing the test then.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not %s within 20 s", what)
		}
	}
}

// vodctl --json prefetch, evict and pin print the manager's answer with
// its title (titleId), so that a script sending several matches the
// answers: they had the node and the message alone. Against a real
// manager and node.
func TestPlacementJSONNamesTitle(t *testing.T) {
	addr, admin := startCluster(t)
	run := func(args ...string) map[string]any {
		t.Helper()
		cmd := newRoot()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"--manager", addr, "--token", "", "--json"}, args...))
		if err := cmd.Execute(); err != nil {
			t.Fatalf("vodctl %v: %v\n%s", args, err, out.String())
		}
		var ack map[string]any
		if err := json.Unmarshal(out.Bytes(), &ack); err != nil {
			t.Fatalf("vodctl %v: %v\n%s", args, err, out.String())
		}
		return ack
	}
	check := func(ack map[string]any, title, node, msg string) {
		t.Helper()
		if ack["titleId"] != title || ack["nodeId"] != node || ack["message"] != msg {
			t.Errorf("answer %v, want titleId %s, nodeId %q, message %q", ack, title, node, msg)
		}
	}
	check(run("prefetch", "sample-002"), "sample-002", "node-1", "prefetch ordered")
	waitUntil(t, "sample-002 stored on node-1", func() bool {
		r, err := admin.ListPlacement(context.Background(), &v1.ListPlacementRequest{TitleId: "sample-002"})
		return err == nil && len(r.Replicas) == 1 && !r.Replicas[0].Filling && r.Replicas[0].StoredBytes == r.Replicas[0].SizeBytes
	})
	check(run("evict", "sample-002", "node-1"), "sample-002", "node-1", "eviction ordered")
	check(run("pin", "sample-001", "node-1"), "sample-001", "node-1", "pinned (kept from eviction where it is; not fetched: storage.planner is none)")
	check(run("pin", "sample-003"), "sample-003", "", "pinned (kept from eviction where it is; not fetched: storage.planner is none)")
	check(run("unpin", "sample-003"), "sample-003", "", "unpinned")

	// Without --json: one line, the order, a colon, the answer (it was
	// padded as a table's column: "node-1  unpinned").
	cmd := newRoot()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--manager", addr, "--token", "", "unpin", "sample-001", "node-1"})
	if err := cmd.Execute(); err != nil || out.String() != "unpin sample-001 on node-1: unpinned\n" {
		t.Errorf("vodctl unpin sample-001 node-1: %v, printed %q, want %q", err, out.String(), "unpin sample-001 on node-1: unpinned\n")
	}
}
