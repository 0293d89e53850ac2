package acm

import (
	"context"
	"testing"
	"time"

	"vodcluster/acm/boss"
	pb "vodcluster/proto/vodcluster/v1"
)

// stuckBOSS is a users file whose check of one name (Entitled of user)
// does not answer until release is closed: entered is closed when the
// check of that name begins.
type stuckBOSS struct {
	boss.BOSS
	user             string
	entered, release chan struct{}
}

func (b *stuckBOSS) Entitled(ctx context.Context, user, pkg string) (bool, error) {
	if user == b.user {
		close(b.entered)
		<-b.release
	}
	return b.BOSS.Entitled(ctx, user, pkg)
}

// TestSuspendChecksTheUsersFileOutsideTheLock: a suspension's check of
// its name in the users file (up to 2 s) is made once the operators'
// change lock (opMu) is released: another operator's change made while
// the users file does not answer goes ahead (it waited for the check,
// and failed UNAVAILABLE after adminStoreWait behind a users file that
// took longer), and neither change is lost.
func TestSuspendChecksTheUsersFileOutsideTheLock(t *testing.T) {
	stuck := &stuckBOSS{user: "slow", entered: make(chan struct{}), release: make(chan struct{})}
	e := newManager(t, t.TempDir(), func(m *Manager) { stuck.BOSS = m.BOSS; m.BOSS = stuck })
	released := false
	release := func() {
		if !released {
			released = true
			close(stuck.release)
		}
	}
	t.Cleanup(release)
	ctx := context.Background()
	slow := make(chan error, 1)
	go func() {
		_, err := e.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "slow", DurationS: 60})
		slow <- err
	}()
	select {
	case <-stuck.entered:
	case err := <-slow:
		t.Fatalf("suspension of slow answered (%v) without asking the users file", err)
	}
	// The users file holds slow's check: another operator's change now.
	if _, err := e.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "demo", DurationS: 60}); err != nil {
		t.Fatalf("suspension of demo while the users file checks slow: %v", err)
	}
	release()
	if err := <-slow; err != nil {
		t.Fatalf("suspension of slow: %v", err)
	}
	stored, err := e.m.readSuspensions(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	for _, u := range []string{"slow", "demo"} {
		if _, ok := stored[u]; !ok || !e.m.suspendedLocked(u, time.Now()) {
			t.Errorf("%s not suspended (stored: %v): a change was lost", u, ok)
		}
	}
}
