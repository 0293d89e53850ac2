package store

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"vodcluster/cdp"
	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// hangingCDP is a real origin (cdp.Server: its channels, its queue, its
// started message) served by a gRPC server of the test's whose first
// transfer of a title in hang, once started, sends nothing (its first
// chunk is held, as by a process stuck opening or reading the title's
// file), holding its channel until its client gives it up; a title named
// k times in hang: its first k transfers.
type hangingCDP struct {
	*cdp.Server

	mu        sync.Mutex
	hang      map[string]int  // titles whose next transfers hang: how many
	transfers []*hungTransfer // every Fetch, in order
}

// hungTransfer is one Fetch through a hangingCDP.
type hungTransfer struct {
	title   string
	offset  int64
	asked   time.Time     // when the Fetch came
	started chan struct{} // closed once the started message is sent
	at      time.Time     // when it was sent, taken just before (read once started is closed)
	gaveUp  chan struct{} // closed when a hung transfer's client gave it up
}

// startHangingCDP serves the titles (written as <id>.ts) from a
// cdp.Server with maxTransfers channels, hanging the first transfer of
// each title of hang (the first k of one named k times).
func startHangingCDP(t *testing.T, titles map[string][]byte, maxTransfers int, hang ...string) (*hangingCDP, pb.OriginClient) {
	t.Helper()
	dir := t.TempDir()
	for id, d := range titles {
		if err := os.WriteFile(filepath.Join(dir, id+".ts"), d, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := &cdp.Server{Dir: dir, Listen: "127.0.0.1:0", MaxTransfers: maxTransfers, CatalogPoll: -1,
		Logger: slog.New(slog.DiscardHandler)}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	o := &hangingCDP{Server: srv, hang: map[string]int{}}
	for _, id := range hang {
		o.hang[id]++
	}
	return o, startOrigin(t, o)
}

func (o *hangingCDP) Fetch(req *pb.FetchRequest, s grpc.ServerStreamingServer[pb.FetchChunk]) error {
	tr := &hungTransfer{title: req.GetTitleId(), offset: req.GetOffset(), asked: time.Now(),
		started: make(chan struct{}), gaveUp: make(chan struct{})}
	o.mu.Lock()
	o.transfers = append(o.transfers, tr)
	hang := o.hang[tr.title] > 0
	o.hang[tr.title]--
	o.mu.Unlock()
	return o.Server.Fetch(req, &hangingStream{ServerStreamingServer: s, tr: tr, hang: hang})
}

// of returns the transfers of title so far.
func (o *hangingCDP) of(title string) []*hungTransfer {
	o.mu.Lock()
	defer o.mu.Unlock()
	var trs []*hungTransfer
	for _, tr := range o.transfers {
		if tr.title == title {
			trs = append(trs, tr)
		}
	}
	return trs
}

// hangingStream is the stream of one transfer through a hangingCDP.
type hangingStream struct {
	grpc.ServerStreamingServer[pb.FetchChunk]
	tr   *hungTransfer
	hang bool
}

func (h *hangingStream) Send(c *pb.FetchChunk) error {
	if !c.GetStarted() && h.hang {
		<-h.Context().Done()
		close(h.tr.gaveUp)
		return h.Context().Err()
	}
	if c.GetStarted() {
		h.tr.at = time.Now() // before the send: the client cannot have it sooner
	}
	if err := h.ServerStreamingServer.Send(c); err != nil {
		return err
	}
	if c.GetStarted() {
		close(h.tr.started)
	}
	return nil
}

// wait waits up to 10 s for ch to close.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10 s", what)
	}
}

// A transfer the origin started (its channel given, the started message
// sent) and then sends nothing on, not even its first byte, is given up
// StallAfter after the start and asked again: the fill does not wait for
// keepalive, which a live process stuck opening or reading the file
// answers forever. The channel it held goes back to the origin, which the
// retry needs (one channel), and the title completes.
func TestFillRetriedWhenTheOriginHangsBeforeItsFirstByte(t *testing.T) {
	t.Parallel() // StallAfter of real time
	data := sample(t)
	o, client := startHangingCDP(t, map[string][]byte{"t1": data}, 1, "t1")
	var logs logtest.Buffer
	s, tt := openAcquire(t, Config{Dir: t.TempDir(), Origin: client, StallAfter: stallAfterTest,
		Retry: 20 * time.Millisecond, RetryFor: 20 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}, "t1")
	waitFor(t, func() bool { return len(o.of("t1")) == 1 }, "the first transfer")
	first := o.of("t1")[0]
	wait(t, first.started, "started message of the first transfer")

	waitComplete(t, tt)
	wait(t, first.gaveUp, "giving up of the hung transfer")
	trs := o.of("t1")
	if len(trs) != 2 || trs[1].offset != 0 {
		t.Fatalf("%d transfers, want 2, the second from offset 0", len(trs))
	}
	// The retry came StallAfter after the start (plus the retry's pause),
	// not sooner, and not after some other, longer, timeout.
	if d := trs[1].asked.Sub(first.at); d < stallAfterTest || d > stallAfterTest+5*time.Second {
		t.Errorf("second transfer %v after the first's start, want StallAfter (%v) and a retry's pause", d, stallAfterTest)
	}
	if !strings.Contains(logs.String(), "since the origin started the transfer at offset 0") {
		t.Errorf("no stall since the start logged:\n%s", logs.String())
	}
	if got := s.OriginBytes(); got != int64(len(data)) {
		t.Errorf("%d bytes from the origin for a title of %d", got, len(data))
	}
	stored, err := os.ReadFile(filepath.Join(s.cfg.Dir, "t1.ts"))
	if err != nil || !bytes.Equal(stored, data) {
		t.Fatalf("stored title differs from the origin's (%d of %d bytes, %v)", len(stored), len(data), err)
	}
}

// A transfer queued at the origin behind busy channels has not started:
// it is not given up however long it waits (twice StallAfter here), and
// goes on once a channel is free, one transfer in all. The channel is held
// by a transfer that started and hangs (another client's).
func TestFillQueuedForAnOriginChannelIsNotGivenUp(t *testing.T) {
	t.Parallel() // twice StallAfter of real time
	data := sample(t)
	o, client := startHangingCDP(t, map[string][]byte{"t0": data, "t1": data}, 1, "t0")
	busyCtx, free := context.WithCancel(context.Background())
	defer free()
	busy, err := client.Fetch(busyCtx, &pb.FetchRequest{TitleId: "t0"})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := busy.Recv(); err != nil || !m.GetStarted() {
		t.Fatalf("the busy transfer's first message: %v, %v; want its start", m, err)
	}

	s, tt := openAcquire(t, Config{Dir: t.TempDir(), Origin: client, StallAfter: stallAfterTest,
		Retry: 20 * time.Millisecond, RetryFor: 20 * time.Second}, "t1")
	waitFor(t, func() bool { return o.Stats().Waiting == 1 }, "the fill's transfer queued at the origin")

	time.Sleep(2 * stallAfterTest) // how long the origin queues the transfer, not a synchronisation
	if trs := o.of("t1"); len(trs) != 1 {
		t.Fatalf("%d transfers of t1 while the first was queued, want one", len(trs))
	}
	if st := o.Stats(); st.Waiting != 1 {
		t.Fatalf("origin after twice StallAfter: %+v, want the fill's transfer still queued", st)
	}
	if v := tt.View(); v.Err != nil || v.Complete || v.Index.Size != 0 {
		t.Fatalf("fill while queued: %+v", v)
	}

	free()
	waitComplete(t, tt)
	trs := o.of("t1")
	if len(trs) != 1 {
		t.Fatalf("%d transfers of t1, want one", len(trs))
	}
	select {
	case <-trs[0].started:
	default:
		t.Error("the fill's transfer completed without its started message")
	}
	if got := s.OriginBytes(); got != int64(len(data)) {
		t.Errorf("%d bytes from the origin for a title of %d", got, len(data))
	}
}

// waitFor polls ok every 10 ms for up to 10 s.
func waitFor(t *testing.T, ok func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10 s", what)
		}
	}
}
