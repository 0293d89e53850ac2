package acm

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"vodcluster/acm/store"
	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// leavingStore cancels the request of the admission whose session it
// stores: its client closes the connection while the manager writes the
// session, before the redirect.
type leavingStore struct {
	store.Store
	leave context.CancelFunc
}

func (l *leavingStore) PutSession(ctx context.Context, s store.Session) error {
	if l.leave != nil && s.State == store.StateAdmitted {
		l.leave()
	}
	return l.Store.PutSession(ctx, s)
}

// A client that leaves before its redirect (a player zapping on, one
// killed) undoes its admission, which is logged at info, as a client
// leaving the queue is not logged as an error: a soak under churn logged
// each one as an ERROR, "admission undone", for nothing that failed.
func TestClientGoneBeforeRedirectIsNotAnError(t *testing.T) {
	b, err := store.OpenBadger(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ls := &leavingStore{Store: b}
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		m.Store = ls
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
	}})
	waitFor(t, 5*time.Second, "n1 to take viewers", func() bool { return e.nodeInfo("n1").GetAlive() })
	ls.leave = cancel
	_, err = e.m.admit(ctx, admitRequest{User: "demo", Title: "t1", ClientIP: "127.0.0.1", Client: "127.0.0.1:40000", Protocol: store.ProtoRTSP})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("admission of a client gone before its redirect: %v, want context.Canceled", err)
	}
	if got := e.reserved("n1"); got != 0 || len(e.sessions()) != 0 {
		t.Fatalf("after the client left: %d bit/s reserved, sessions %v", got, e.sessions())
	}
	out := log.String()
	if !strings.Contains(out, "client left before its redirect") {
		t.Fatalf("the undone admission is not logged:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "level=ERROR") {
			t.Errorf("a client leaving is logged as an error: %s", line)
		}
	}
}
