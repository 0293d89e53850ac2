//go:build unix

package cdp

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	vodclusterv1 "vodcluster/proto/vodcluster/v1"
)

// A transfer stuck opening its title's file, in an open no context
// interrupts (here a FIFO no one writes to, as a hung network file system
// or a failing disk leaves an open or a read), gives its channel back as
// soon as its caller gives it up, not when the open returns: a node gives
// up a transfer that started and then sends nothing (its StallAfter) and
// asks again, and that retry, like every other transfer, would otherwise
// queue behind the stuck one for as long as the open hangs.
func TestFetchGivesTheChannelBackWhenItsCallerLeavesAStuckOpen(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "stuck.ts")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	s, c := startServer(t, func(s *Server) { s.MaxTransfers = 1 })
	// sample-001's file, once loaded, becomes the FIFO: its open blocks
	// until a writer comes (the stat of it before it queues does not
	// block).
	s.mu.Lock()
	titles := s.catalog.Titles()
	for i := range titles {
		if titles[i].ID == "sample-001" {
			titles[i].Path, titles[i].file = fifo, nil
		}
	}
	s.catalog = newCatalog(titles)
	s.mu.Unlock()
	// Run before the server's Close (cleanups run last first): a writer
	// ends the stuck open, and the transfer with it.
	t.Cleanup(func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})

	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	a, err := c.Fetch(ctxA, &vodclusterv1.FetchRequest{TitleId: "sample-001"})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := a.Recv(); err != nil || !m.GetStarted() {
		t.Fatalf("stuck transfer's first message: %v, %v; want its start", m, err)
	}

	// B queues for the one channel, which A holds while its open hangs.
	type result struct {
		data []byte
		err  error
	}
	ctxB, cancelB := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelB()
	done := make(chan result, 1)
	go func() {
		d, err := fetch(ctxB, c, &vodclusterv1.FetchRequest{TitleId: "sample-002"}, DefaultChunkBytes)
		done <- result{d, err}
	}()
	waitStats(t, s, "B queued behind the stuck transfer", func(st Stats) bool { return st.Waiting == 1 && st.Active == 1 })

	// A's caller gives up: B gets the channel and its title, while A's
	// open still hangs.
	cancelA()
	r := <-done // within ctxB's 10 s
	if r.err != nil {
		t.Fatalf("transfer queued behind a stuck one whose caller left: %v (stats %+v)", r.err, s.Stats())
	}
	if clip := readClip(t, "clip-b.ts"); len(r.data) != len(clip) {
		t.Fatalf("B got %d bytes of %d", len(r.data), len(clip))
	}
	if st := s.Stats(); st.Transfers != 2 || st.PeakActive != 1 || st.Active != 0 || st.Abandoned != 1 {
		t.Errorf("stats %+v: want 2 transfers, one channel at a time, none left holding one, one abandoned and still stuck", st)
	}
	// The open returns (a writer comes): the transfer is no longer counted.
	w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	waitStats(t, s, "the stuck transfer to return", func(st Stats) bool { return st.Abandoned == 0 })
}

// A fetch whose stat of its title's file, before it queues for a channel,
// hangs (a network file system or a failing disk; here a stat that waits)
// is counted abandoned once its caller gives it up, until the stat
// returns, as a transfer stuck in its open is (cdp_transfers_abandoned,
// alert VodclusterOriginTransfersStuck): it holds no channel, and was
// counted nowhere, neither waiting, active nor abandoned, while the
// fetches of a hung title directory piled up. The other titles' fetches
// go on meanwhile.
func TestFetchStuckInItsStatIsCountedWhenItsCallerLeaves(t *testing.T) {
	entered, free := make(chan struct{}), make(chan struct{})
	var stuck string
	s, c := startServer(t, func(s *Server) {
		s.MaxTransfers = 1
		s.statFile = func(path string) (fs.FileInfo, error) {
			if path == stuck {
				close(entered)
				<-free
			}
			return os.Stat(path)
		}
	})
	ti, _ := s.Catalog().Title("sample-001")
	stuck = ti.Path
	released := false
	release := func() {
		if !released {
			released = true
			close(free)
		}
	}
	t.Cleanup(release) // before the server's Close, which waits for its handlers

	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	endA := make(chan error, 1)
	go func() {
		_, err := fetch(ctxA, c, &vodclusterv1.FetchRequest{TitleId: "sample-001", IfVersion: ti.Version}, DefaultChunkBytes)
		endA <- err
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the fetch did not stat its title's file")
	}
	if st := s.Stats(); st.Abandoned != 0 || st.Waiting != 0 || st.Active != 0 {
		t.Fatalf("stats %+v with the stat hung and its caller there: want none abandoned, waiting or active", st)
	}
	cancelA()
	select {
	case err := <-endA:
		wantCode(t, err, codes.Canceled, "")
	case <-time.After(10 * time.Second):
		t.Fatal("the caller of the fetch stuck in its stat did not get its cancel")
	}
	waitStats(t, s, "the fetch stuck in its stat counted abandoned", func(st Stats) bool { return st.Abandoned == 1 })

	ctxB, cancelB := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelB()
	d, err := fetch(ctxB, c, &vodclusterv1.FetchRequest{TitleId: "sample-002"}, DefaultChunkBytes)
	if err != nil || len(d) != len(readClip(t, "clip-b.ts")) {
		t.Fatalf("another title's fetch while one stat hangs: %d bytes, %v", len(d), err)
	}

	release()
	waitStats(t, s, "the stat to return", func(st Stats) bool { return st.Abandoned == 0 })
	if st := s.Stats(); st.Transfers != 1 || st.Active != 0 {
		t.Errorf("stats %+v: want one transfer (the other title's), none active", st)
	}
}

// A fetch whose stat of its title's file, before it queues, hangs is
// answered UNAVAILABLE once the stat has not returned within its bound
// (StatTimeout; shorter here), so that a node, which bounds a transfer's
// silence only from the origin's started message, retries it rather than
// waiting with no bound; GetTitle's stat likewise. Each stat left behind
// counts abandoned until it returns; none took a channel.
func TestFetchStuckInItsStatIsAnsweredUnavailable(t *testing.T) {
	entered, free := make(chan struct{}, 2), make(chan struct{})
	var stuck string
	s, c := startServer(t, func(s *Server) {
		s.MaxTransfers = 1
		s.statWait = 100 * time.Millisecond
		s.statFile = func(path string) (fs.FileInfo, error) {
			if path == stuck {
				entered <- struct{}{}
				<-free
			}
			return os.Stat(path)
		}
	})
	ti, _ := s.Catalog().Title("sample-001")
	stuck = ti.Path
	var once sync.Once
	release := func() { once.Do(func() { close(free) }) }
	t.Cleanup(release) // before the server's Close, which waits for its handlers

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // generous: the bound is 100 ms
	defer cancel()
	_, err := fetch(ctx, c, &vodclusterv1.FetchRequest{TitleId: "sample-001", IfVersion: ti.Version}, DefaultChunkBytes)
	wantCode(t, err, codes.Unavailable, `title "sample-001": the origin's stat of its file did not return within 100ms`)
	waitStats(t, s, "the fetch's stat left hung counted abandoned", func(st Stats) bool { return st.Abandoned == 1 })
	_, err = c.GetTitle(ctx, &vodclusterv1.GetTitleRequest{TitleId: "sample-001"})
	wantCode(t, err, codes.Unavailable, `title "sample-001": the origin's stat of its file did not return within 100ms`)
	waitStats(t, s, "GetTitle's stat left hung counted abandoned", func(st Stats) bool { return st.Abandoned == 2 })
	if st := s.Stats(); st.Transfers != 0 || st.Waiting != 0 || st.Active != 0 {
		t.Fatalf("stats %+v: want no transfer, none waiting or active", st)
	}
	for range 2 {
		<-entered
	}

	release()
	waitStats(t, s, "the stats to return", func(st Stats) bool { return st.Abandoned == 0 })
	d, err := fetch(ctx, c, &vodclusterv1.FetchRequest{TitleId: "sample-001", IfVersion: ti.Version}, DefaultChunkBytes)
	if err != nil || len(d) != int(ti.SizeBytes) {
		t.Fatalf("fetch once the stat returns: %d bytes, %v", len(d), err)
	}
}
