package acm

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"vodcluster/acm/store"
)

// Nodes registering at once with two managers sharing a store (a rolling
// restart, the nodes split between them) each have their transport
// stored: a manager's read, change and write of the stored map wrote over
// the other's entries (27 of 40 kept), and a restarted manager then took
// a node that serves UDP and is away for none, answering 461.
func TestTransportsStoredByTwoManagersAtOnce(t *testing.T) {
	open, _ := sharedRedis(t)
	st := open()
	a, b := activeAndStandby(t, open, testTitles, nil)
	var wg sync.WaitGroup
	for k := range 20 {
		for _, e := range []*env{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("n-%p-%d", e, k)
				if _, err := e.nc.Register(context.Background(), regReq(id, fmt.Sprintf("127.0.0.1:%d", 20000+k), "", 10*titleBps)); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	stored := storedTransports(t, st)
	if len(stored) != 40 {
		t.Errorf("%d of the 40 nodes' transports stored", len(stored))
	}
}

// slowTransports is a Redis store whose reads of the stored transports
// answer after delay while slow is set (a store that has slowed down).
type slowTransports struct {
	*store.Redis
	slow  atomic.Bool
	delay time.Duration
}

func (s *slowTransports) State(ctx context.Context, name string) ([]byte, error) {
	b, err := s.Redis.State(ctx, name)
	if name == stateNodeTransports && s.slow.Load() {
		select {
		case <-time.After(s.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return b, err
}

// With a store_timeout of 10 s and a store that takes 6 s to answer one
// manager's read of the transports, the other manager's entry written
// meanwhile is kept: the lock's lease was 5 s, ran out mid-write, the
// other took the lock and wrote, and the slow write went over it.
func TestTransportsLockOutlastsASlowWrite(t *testing.T) {
	open, _ := sharedRedis(t)
	st := open()
	var slow []*slowTransports
	a, b := activeAndStandby(t, open, testTitles, func(m *Manager) {
		w := &slowTransports{Redis: m.Store.(*store.Redis), delay: 6 * time.Second}
		slow = append(slow, w)
		m.Store, m.StoreTimeout = w, 10*time.Second
	})
	slow[0].slow.Store(true)
	done := make(chan error, 1)
	go func() {
		_, err := a.nc.Register(context.Background(), regReq("na", "127.0.0.1:21001", "", 10*titleBps))
		done <- err
	}()
	waitFor(t, 5*time.Second, "a's write under way", func() bool {
		holder, err := st.LockHolder(context.Background(), transportsLock)
		return err == nil && holder != ""
	})
	if _, err := b.nc.Register(context.Background(), regReq("nb", "127.0.0.1:21002", "", 10*titleBps)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	stored := storedTransports(t, st)
	if _, ok := stored["na"]; !ok {
		t.Errorf("stored %v: na lost", stored)
	}
	if _, ok := stored["nb"]; !ok {
		t.Errorf("stored %v: nb lost", stored)
	}
}

// storedTransports returns the node transports stored in st.
func storedTransports(t *testing.T, st store.Store) map[string]storedTransport {
	t.Helper()
	raw, err := st.State(context.Background(), stateNodeTransports)
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string]storedTransport
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	return stored
}
