package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm"
	"vodcluster/acm/store"
	v1 "vodcluster/proto/vodcluster/v1"
)

// refusingStore is a manager's badger store whose writes of the
// operator's state fail once refuse is set (a full disk).
type refusingStore struct {
	*store.Badger
	refuse *atomic.Bool
}

func (s refusingStore) PutState(ctx context.Context, name string, b []byte) error {
	if s.refuse.Load() {
		return errors.New("no space left on device")
	}
	return s.Badger.PutState(ctx, name, b)
}

// vodctlRun runs vodctl against the manager at addr as main does, and
// returns its exit status, standard output and standard error.
func vodctlRun(addr string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(append([]string{"--manager", addr, "--token", ""}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// A policy, a node's setting or a forget that the manager's store
// refuses is in use in the manager all the same ("... in this manager,
// but not saved"), yet vodctl exited 1 with UNAVAILABLE, as for a change
// refused: a script could not tell the two apart. It now exits 3
// (exitNotSaved) with the manager's message as a warning, when the
// answer carries the detail saying so; a change refused still exits 1.
// Against a real manager and node.
func TestChangeNotSavedExitStatus(t *testing.T) {
	dir := t.TempDir()
	origin := startOrigin(t, dir)
	refuse := &atomic.Bool{}
	m, admin := startManagerWith(t, dir, origin, func(m *acm.Manager) {
		b, err := store.OpenBadger(filepath.Join(dir, "store"), quietLog)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		m.Store = refusingStore{b, refuse}
	})
	n := startNode(t, dir, "node-1", m, origin)
	waitUntil(t, "node-1 alive", func() bool {
		r, err := admin.ListNodes(context.Background(), &v1.ListNodesRequest{})
		return err == nil && len(r.Nodes) == 1 && r.Nodes[0].Alive
	})
	addr := m.GRPCAddr()
	if code, _, stderr := vodctlRun(addr, "node", "node-1", "--weight", "50"); code != 0 {
		t.Fatalf("node --weight, the store taking it: exit %d, %s", code, stderr)
	}

	refuse.Store(true)
	check := func(want string, args ...string) {
		t.Helper()
		code, stdout, stderr := vodctlRun(addr, args...)
		if code != exitNotSaved || !strings.HasPrefix(stderr, "vodctl: warning: "+want) || stdout != "" {
			t.Errorf("vodctl %s, the store refusing: exit %d, stdout %q, stderr %q; want exit %d, nothing on stdout, stderr 'vodctl: warning: %s...'",
				strings.Join(args, " "), code, stdout, stderr, exitNotSaved, want)
		}
	}
	check("policy rr in use in this manager, but not saved", "policy", "rr")
	check("node node-1 changed in this manager, but not saved", "node", "node-1", "--drain")
	if r, err := admin.ListNodes(context.Background(), &v1.ListNodesRequest{}); err != nil || !r.Nodes[0].Draining {
		t.Fatalf("node-1 after a drain not saved: %v %v; want draining in the manager", r, err)
	}
	n.Close()
	waitUntil(t, "node-1 dead", func() bool {
		r, err := admin.ListNodes(context.Background(), &v1.ListNodesRequest{})
		return err == nil && len(r.Nodes) == 1 && !r.Nodes[0].Alive
	})
	check("node node-1 forgotten in this manager, but not removed from the store", "node", "forget", "node-1")

	// Refused, nothing changed: exit 1, the error as before.
	if code, _, stderr := vodctlRun(addr, "policy", "no-such-policy"); code != 1 || !strings.HasPrefix(stderr, "vodctl: unknown scheduling policy \"no-such-policy\" (the valid names are ") || !strings.HasSuffix(stderr, " [INVALID_ARGUMENT]\n") {
		t.Errorf("policy refused: exit %d, %q; want 1 and the error", code, stderr)
	}
}

// oldNotSavedAdmin answers a policy change as a manager before the
// CHANGE_NOT_SAVED detail did: UNAVAILABLE alone.
type oldNotSavedAdmin struct{ v1.UnimplementedAdminServer }

func (oldNotSavedAdmin) SetPolicy(context.Context, *v1.SetPolicyRequest) (*v1.PolicyInfo, error) {
	return nil, status.Error(codes.Unavailable, "policy rr in use in this manager, but not saved (store: disk full): ...")
}

// Against a manager that predates the detail, vodctl exits 1 as before:
// it cannot tell such an answer from a refusal but by its text.
func TestChangeNotSavedOldManager(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	v1.RegisterAdminServer(srv, oldNotSavedAdmin{})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	code, _, stderr := vodctlRun(lis.Addr().String(), "policy", "rr")
	if code != 1 || stderr != "vodctl: policy rr in use in this manager, but not saved (store: disk full): ... [UNAVAILABLE]\n" {
		t.Fatalf("old manager's answer: exit %d, %q; want 1 and the UNAVAILABLE error", code, stderr)
	}
}
