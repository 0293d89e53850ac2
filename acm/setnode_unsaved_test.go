package acm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// errSettingsRefused is what the stores below answer a write of the node
// settings.
var errSettingsRefused = errors.New("node settings refused")

// settingsRefusedBadger is a store of its own whose writes of the node
// settings fail.
type settingsRefusedBadger struct{ store.Store }

func (s settingsRefusedBadger) PutState(ctx context.Context, name string, b []byte) error {
	if name == stateNodeSettings {
		return errSettingsRefused
	}
	return s.Store.PutState(ctx, name, b)
}

// settingsRefusedRedis is a shared store (a store.Locker) whose writes of
// the node settings fail.
type settingsRefusedRedis struct{ *store.Redis }

func (s settingsRefusedRedis) PutState(ctx context.Context, name string, b []byte) error {
	if name == stateNodeSettings {
		return errSettingsRefused
	}
	return s.Redis.PutState(ctx, name, b)
}

// A node setting the store did not take says what forgets it, and that
// is what happens: on a store of its own the manager keeps it for the
// node's registrations (until it restarts); on a shared store the node's
// next registration reads the stored setting, and forgets it. The message
// said "the node's next registration forgets it" in both cases.
func TestSetNodeNotSavedSaysWhatForgetsIt(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		configure func(t *testing.T) func(*Manager)
		want      string // in the message
		kept      bool   // the drain after the node registers again
	}{
		{"own store", func(t *testing.T) func(*Manager) {
			b, err := store.OpenBadger(t.TempDir(), testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return func(m *Manager) { m.Store = settingsRefusedBadger{b} }
		}, "this manager keeps it until it restarts", true},
		{"shared store", func(t *testing.T) func(*Manager) {
			open, _ := sharedRedis(t)
			return onShared(settingsRefusedRedis{open()}, nil, time.Minute)
		}, "a manager restart, a takeover by another manager or the node's next registration forgets it", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newManager(t, "", tc.configure(t))
			if !e.m.Leader() {
				t.Fatal("the manager is not the leader")
			}
			n := e.registerWith("n1")
			_, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)})
			if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), tc.want) {
				t.Fatalf("drain not saved: %v; want UNAVAILABLE saying %q", err, tc.want)
			}
			if !pb.IsNotSaved(err) {
				t.Errorf("drain not saved: the answer carries no %s detail: a script cannot tell it from a change refused", pb.ReasonNotSaved)
			}
			if !e.nodeInfo("n1").Draining {
				t.Fatal("the drain not held in the manager")
			}
			n.stop()
			e.registerWith("n1")
			if got := e.nodeInfo("n1").Draining; got != tc.kept {
				t.Fatalf("after the node's registration: draining %v, want %v (the message: %v)", got, tc.kept, err)
			}
		})
	}
}
