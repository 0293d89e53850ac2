package store

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// The retry window (RetryFor) counts only the time a fill's retries did
// not spend queued at the origin for a channel. A real origin with one
// channel: the fill's first transfer starts and hangs (given up after
// StallAfter: the window starts); its retry queues behind another
// client's transfer that holds the channel longer than the window, then
// starts and hangs too. Given up again, the fill has spent StallAfter and
// a pause of the window, not the queue's seconds: it retries a third time
// and completes (it failed with no further attempt when the queue counted).
func TestFillRetryWindowLeavesOutTheOriginQueue(t *testing.T) {
	t.Parallel() // seconds of real time: two stalls and a queue
	const (
		stall  = time.Second
		window = 5 * stall / 2
		hold   = window + time.Second // the retry's queue: longer than the window
	)
	data := sample(t)
	o, client := startHangingCDP(t, map[string][]byte{"t0": data, "t1": data}, 1, "t1", "t1", "t0")
	var logs logtest.Buffer
	s, tt := openAcquire(t, Config{Dir: t.TempDir(), Origin: client, StallAfter: stall,
		Retry: 20 * time.Millisecond, RetryMax: 20 * time.Millisecond, RetryFor: window,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, "t1")
	waitFor(t, func() bool { return len(o.of("t1")) == 1 }, "the fill's first transfer")
	wait(t, o.of("t1")[0].started, "start of the fill's first transfer")

	// Another client's transfer queues behind the hung one (within
	// StallAfter), takes the channel when the fill gives that up, and
	// holds it: the fill's retry queues behind it.
	busyCtx, free := context.WithCancel(context.Background())
	defer free()
	busy, err := client.Fetch(busyCtx, &pb.FetchRequest{TitleId: "t0"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return o.Stats().Waiting == 1 }, "the other transfer queued")
	if len(o.of("t1")) != 1 {
		t.Fatal("the fill retried before the other transfer queued: StallAfter too short for this machine")
	}
	if m, err := busy.Recv(); err != nil || !m.GetStarted() {
		t.Fatalf("the other transfer's first message: %v, %v; want its start", m, err)
	}
	waitFor(t, func() bool { return len(o.of("t1")) == 2 && o.Stats().Waiting == 1 }, "the fill's retry queued")
	retry := o.of("t1")[1]
	time.Sleep(hold) // how long the origin queues the retry, not a synchronisation
	if v := tt.View(); v.Err != nil || v.Complete {
		t.Fatalf("fill while its retry was queued: %+v", v)
	}
	select {
	case <-retry.started:
		t.Fatal("the retry started while the channel was held")
	default:
	}

	free()
	wait(t, retry.started, "start of the fill's retry")
	if q := retry.at.Sub(retry.asked); q < window {
		t.Fatalf("the retry queued %v, not longer than the window (%v)", q, window)
	}
	if err := waitEnded(t, tt); err != nil {
		t.Fatalf("fill failed after a retry queued longer than the window: %v\n%s", err, logs.String())
	}
	trs := o.of("t1")
	if len(trs) != 3 {
		t.Fatalf("%d transfers of t1, want 3 (two hung, the last whole)", len(trs))
	}
	if got := s.OriginBytes(); got != int64(len(data)) {
		t.Errorf("%d bytes from the origin for a title of %d", got, len(data))
	}
	if c := strings.Count(logs.String(), `msg="fill interrupted, retrying"`); c != 2 {
		t.Errorf("%d retries logged, want 2:\n%s", c, logs.String())
	}
}
