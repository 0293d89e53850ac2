//go:build unix

package cdp

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

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
	// until a writer comes (no version asked: no stat of it before).
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
