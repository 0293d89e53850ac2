package acm

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// heldPinsStore is a store whose writes of the pins, while hold is set,
// wait for release and fail with what it sends.
type heldPinsStore struct {
	store.Store
	hold    atomic.Bool
	entered chan struct{}
	release chan error
}

func (s *heldPinsStore) PutState(ctx context.Context, name string, b []byte) error {
	if name == statePins && s.hold.Load() {
		s.entered <- struct{}{}
		return <-s.release
	}
	return s.Store.PutState(ctx, name, b)
}

// A pin change the store refuses is undone, and a node told the changed
// set meanwhile (its registration, while the write waited) is told the
// pins again as they are: an unpin undone left the node believing the
// title unpinned, its own eviction free to remove a pinned title.
func TestPinChangeUndoneReachesTheNodeToldIt(t *testing.T) {
	ctx := context.Background()
	b, err := store.OpenBadger(t.TempDir(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	st := &heldPinsStore{Store: b, entered: make(chan struct{}, 1), release: make(chan error)}
	e := newManager(t, "", func(m *Manager) { m.Store = st })
	n := e.registerWith("n1")
	if _, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	n.stop()

	st.hold.Store(true)
	unpinned := make(chan error, 1)
	go func() {
		_, err := e.admin.Unpin(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
		unpinned <- err
	}()
	select {
	case <-st.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the unpin's write did not start")
	}
	// The node registers while the unpin waits for the store.
	e.registerOnly("n1")
	rec := &cmdRecorder{}
	e.openStream("n1", rec)
	protects := func() [][]string {
		var out [][]string
		for _, c := range rec.list() {
			if p := c.GetProtect(); p != nil {
				out = append(out, p.GetTitleIds())
			}
		}
		return out
	}
	waitFor(t, 5*time.Second, "the registration's protect command", func() bool { return len(protects()) > 0 })
	st.release <- errors.New("store down")
	if err := <-unpinned; grpcCode(err) != codes.Unavailable {
		t.Fatalf("unpin with the store down: %v, want UNAVAILABLE", err)
	}
	waitFor(t, 5*time.Second, "the node told t1 is pinned after the unpin was undone", func() bool {
		p := protects()
		return slices.Equal(p[len(p)-1], []string{"t1"})
	})
}
