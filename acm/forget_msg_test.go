package acm

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// errStateRefused is what the stores below answer a refused write.
var errStateRefused = errors.New("state write refused")

// stateRefusedBadger is a store of its own that refuses, once armed, the
// writes of the operator's state.
type stateRefusedBadger struct {
	store.Store
	armed *atomic.Bool
}

func (s stateRefusedBadger) PutState(ctx context.Context, name string, b []byte) error {
	if s.armed.Load() {
		return errStateRefused
	}
	return s.Store.PutState(ctx, name, b)
}

// forgottenRefusedRedis is a shared store that refuses, once armed, the
// write of the forgets' record for the standby (stateForgotten) alone.
type forgottenRefusedRedis struct {
	*store.Redis
	armed *atomic.Bool
}

func (s forgottenRefusedRedis) PutState(ctx context.Context, name string, b []byte) error {
	if s.armed.Load() && name == stateForgotten {
		return errStateRefused
	}
	return s.Redis.PutState(ctx, name, b)
}

// The message of a forget whose store work failed fits the store: on a
// store of its own it said "a manager restart or a takeover applies
// them" (there is no takeover); on a shared store whose record of the
// forget for the standby was not written it listed that record among
// the state "not removed from the store", though it was never written.
func TestForgetNotSavedMessageFitsTheStore(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		configure func(t *testing.T, armed *atomic.Bool) func(*Manager)
		want      []string
		not       []string
	}{
		{"own store", func(t *testing.T, armed *atomic.Bool) func(*Manager) {
			b, err := store.OpenBadger(t.TempDir(), testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return func(m *Manager) { m.Store = stateRefusedBadger{b, armed} }
		}, []string{"node n1 forgotten in this manager, but not removed from the store: its operator setting",
			"until then a manager restart applies what is left to a node registering under the id"},
			[]string{"takeover", "standby"}},
		{"shared store", func(t *testing.T, armed *atomic.Bool) func(*Manager) {
			open, _ := sharedRedis(t)
			return onShared(forgottenRefusedRedis{open(), armed}, nil, time.Minute)
		}, []string{"node n1 forgotten in this manager, but the record of the forget for the standby not written (",
			"until then the standby, taking over, still lists the node"},
			[]string{"not removed", "applies what is left"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var armed atomic.Bool
			e := newManager(t, "", tc.configure(t, &armed))
			n1 := e.startNode("n1", nodeOpts{})
			if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)}); err != nil {
				t.Fatal(err)
			}
			n1.leave()
			waitFor(t, 5*time.Second, "n1 out of service", func() bool { return !e.nodeInfo("n1").Alive })
			armed.Store(true)
			_, err := e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n1"})
			if !pb.IsNotSaved(err) {
				t.Fatalf("forget, its write refused: %v; want forgotten here but not saved", err)
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("forget not saved: %q; want it to say %q", msg, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(msg, w) {
					t.Errorf("forget not saved: %q says %q", msg, w)
				}
			}
		})
	}
}
