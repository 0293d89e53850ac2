package acm

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
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
	raw, err := st.State(context.Background(), stateNodeTransports)
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string]storedTransport
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	if len(stored) != 40 {
		t.Errorf("%d of the 40 nodes' transports stored", len(stored))
	}
}
