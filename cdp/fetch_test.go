package cdp

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	vodclusterv1 "vodcluster/proto/vodcluster/v1"
)

func TestMaxTransfers(t *testing.T) {
	clk := newFakeClock(true)
	s, c := startServer(t, func(s *Server) {
		s.MaxTransfers = 2
		s.SetupDelay = time.Second
		s.clock = clk
	})
	clips := map[string][]byte{
		"sample-001": readClip(t, "clip-a.ts"),
		"sample-002": readClip(t, "clip-b.ts"),
		"sample-003": readClip(t, "clip-c.ts"),
	}
	ids := []string{"sample-001", "sample-002", "sample-003", "sample-001", "sample-002"}
	type result struct {
		id   string
		data []byte
		err  error
	}
	results := make(chan result, len(ids))
	for _, id := range ids {
		go func() {
			data, err := fetch(context.Background(), c, &vodclusterv1.FetchRequest{TitleId: id}, DefaultChunkBytes)
			results <- result{id, data, err}
		}()
	}

	// Two transfers hold the two channels (in their setup delay), three queue.
	clk.waitEntered(t, 2)
	st := waitStats(t, s, "3 queued fetches", func(st Stats) bool { return st.Waiting == 3 })
	if st.Active != 2 || st.Transfers != 2 {
		t.Fatalf("stats with 2 channels held: %+v", st)
	}
	_, err := fetch(context.Background(), c, &vodclusterv1.FetchRequest{TitleId: "sample-003", NoWait: true}, DefaultChunkBytes)
	wantCode(t, err, codes.ResourceExhausted, "all 2 origin transfer channels are busy")
	if st := s.Stats(); st.Refused != 1 || st.Transfers != 2 {
		t.Errorf("after a refused no_wait fetch: %+v", st)
	}

	close(clk.gate)
	for range ids {
		r := <-results
		if r.err != nil {
			t.Fatalf("%s: %v", r.id, r.err)
		}
		if !bytes.Equal(r.data, clips[r.id]) {
			t.Errorf("%s: %d bytes differ from its clip", r.id, len(r.data))
		}
	}
	st = s.Stats()
	if st.PeakActive != 2 || st.Transfers != 5 || st.Active != 0 || st.Waiting != 0 ||
		st.TitleTransfers["sample-001"] != 2 || st.TitleTransfers["sample-003"] != 1 {
		t.Errorf("final stats %+v", st)
	}
	if got := clk.recorded(); len(got) != 5 || got[0] != time.Second {
		t.Errorf("setup delays paid: %v, want 5 x 1s", got)
	}
}

func TestCancelFreesChannel(t *testing.T) {
	clk := newFakeClock(true)
	s, c := startServer(t, func(s *Server) {
		s.MaxTransfers = 1
		s.SetupDelay = time.Second
		s.clock = clk
	})
	errs := make(chan error, 2)
	fetchIn := func(ctx context.Context) {
		_, err := fetch(ctx, c, &vodclusterv1.FetchRequest{TitleId: "sample-005"}, DefaultChunkBytes)
		errs <- err
	}

	// A holds the channel in its setup delay; B queues behind it.
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	go fetchIn(ctxA)
	clk.waitEntered(t, 1)
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	go fetchIn(ctxB)
	waitStats(t, s, "B queued", func(st Stats) bool { return st.Waiting == 1 && st.Active == 1 })

	// B gives up while queued, A while in its setup delay.
	cancelB()
	wantCode(t, <-errs, codes.Canceled, "")
	waitStats(t, s, "B out of the queue", func(st Stats) bool { return st.Waiting == 0 })
	cancelA()
	wantCode(t, <-errs, codes.Canceled, "")
	waitStats(t, s, "A's channel back", func(st Stats) bool { return st.Active == 0 })

	// A deadline while queued behind a held channel.
	ctxD, cancelD := context.WithCancel(context.Background())
	defer cancelD()
	go fetchIn(ctxD)
	clk.waitEntered(t, 1)
	ctxE, cancelE := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelE()
	_, err := fetch(ctxE, c, &vodclusterv1.FetchRequest{TitleId: "sample-005"}, DefaultChunkBytes)
	wantCode(t, err, codes.DeadlineExceeded, "")
	cancelD()
	wantCode(t, <-errs, codes.Canceled, "")

	// The channel is free again: a no_wait fetch gets it.
	close(clk.gate)
	waitStats(t, s, "channel free", func(st Stats) bool { return st.Active == 0 && st.Waiting == 0 })
	data, err := fetch(context.Background(), c, &vodclusterv1.FetchRequest{TitleId: "sample-005", NoWait: true}, DefaultChunkBytes)
	if err != nil || len(data) == 0 {
		t.Fatalf("no_wait fetch after cancellations: %d bytes, %v", len(data), err)
	}
	if st := s.Stats(); st.Transfers != 3 || st.TitleTransfers["sample-005"] != 3 || st.PeakActive != 1 {
		t.Errorf("stats %+v: want 3 transfers started (A, D, the last), peak 1", st)
	}
}

func TestCancelMidTransfer(t *testing.T) {
	s, c := startPaced(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := c.Fetch(ctx, &vodclusterv1.FetchRequest{TitleId: "sample-007"})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := stream.Recv(); err != nil || !m.GetStarted() {
		t.Fatalf("first message: %v, %v; want the transfer's start", m, err)
	}
	first, err := stream.Recv() // the burst: sent at once
	if err != nil || len(first.GetData()) != chunk {
		t.Fatalf("first chunk: %v, %v", first, err)
	}
	cancel()
	for {
		_, err := stream.Recv() // a chunk already on its way may still come
		if err != nil {
			wantCode(t, err, codes.Canceled, "")
			break
		}
	}
	waitStats(t, s, "channel back after the client left", func(st Stats) bool { return st.Active == 0 })
	stream, err = c.Fetch(context.Background(), &vodclusterv1.FetchRequest{TitleId: "sample-007", Length: chunk, NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := stream.Recv(); err != nil || !m.GetStarted() {
		t.Fatalf("no_wait fetch after a cancelled transfer, first message: %v, %v; want the transfer's start", m, err)
	}
	if ch, err := stream.Recv(); err != nil || len(ch.GetData()) != chunk {
		t.Fatalf("no_wait fetch after a cancelled transfer: %v, %v", ch, err)
	}
	if st := s.Stats(); st.Transfers != 2 || st.Refused != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestRateTokens checks the pacing by the delays the token bucket asks
// for, on a fake clock: a transfer of S bytes at R bit/s with a burst of one
// chunk C waits SetupDelay + (S-C)*8/R, whatever the wall clock does.
func TestRateTokens(t *testing.T) {
	const chunk = 100 * 188
	const rateBps = 600_000
	clk := newFakeClock(false)
	_, c := startServer(t, func(s *Server) {
		s.SetupDelay = 2 * time.Second
		s.TransferRateBps = rateBps
		s.ChunkBytes = chunk
		s.clock = clk
	})
	clip := readClip(t, "clip-a.ts")
	start := clk.Now()
	got, err := fetch(context.Background(), c, &vodclusterv1.FetchRequest{TitleId: "sample-001"}, chunk)
	if err != nil || !bytes.Equal(got, clip) {
		t.Fatalf("fetch: %d bytes, %v", len(got), err)
	}
	elapsed := clk.Now().Sub(start)
	want := 2*time.Second + time.Duration(float64(len(clip)-chunk)*8/rateBps*float64(time.Second))
	if d := elapsed - want; d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("paced transfer took %v on the fake clock, want %v", elapsed, want)
	}
	sleeps := clk.recorded()
	if sleeps[0] != 2*time.Second {
		t.Errorf("first wait %v, want the setup delay", sleeps[0])
	}
	// After the burst every full chunk waits chunk*8/R.
	chunkBits := float64(chunk * 8)
	per := time.Duration(chunkBits / rateBps * float64(time.Second))
	for i, d := range sleeps[2 : len(sleeps)-1] {
		if d < per-time.Microsecond || d > per+time.Microsecond {
			t.Fatalf("chunk %d waited %v, want %v", i+2, d, per)
		}
	}

	// Unlimited rate: only the setup delay is waited for.
	clk2 := newFakeClock(false)
	_, c2 := startServer(t, func(s *Server) { s.clock = clk2; s.SetupDelay = time.Second })
	if _, err := fetch(context.Background(), c2, &vodclusterv1.FetchRequest{TitleId: "sample-001"}, DefaultChunkBytes); err != nil {
		t.Fatal(err)
	}
	if got := clk2.recorded(); len(got) != 1 || got[0] != time.Second {
		t.Errorf("waits without a rate: %v", got)
	}
}

// A transfer capped at a rate under one chunk a second sends smaller
// chunks (whole packets, a second's worth), so no gap between two
// messages comes near a node's StallAfter (10 s): 1 MiB chunks at
// 100 kbit/s were 84 s apart, and every such fill was given up as stalled.
func TestSlowRateSendsASecondAtATime(t *testing.T) {
	const chunk = MaxChunkBytes / 188 * 188
	const rateBps = 100_000
	perSecond := rateBps / 8 / 188 * 188 // 12,408 bytes
	clk := newFakeClock(false)
	_, c := startServer(t, func(s *Server) {
		s.TransferRateBps = rateBps
		s.ChunkBytes = chunk
		s.clock = clk
	})
	clip := readClip(t, "clip-a.ts")
	got, err := fetch(context.Background(), c, &vodclusterv1.FetchRequest{TitleId: "sample-001"}, perSecond)
	if err != nil || !bytes.Equal(got, clip) {
		t.Fatalf("fetch at %d bit/s with %d-byte chunks: %d bytes of %d, %v", rateBps, chunk, len(got), len(clip), err)
	}
	for i, d := range clk.recorded() {
		if d > time.Second {
			t.Fatalf("wait %d before a chunk: %v, want at most a second", i, d)
		}
	}
	for _, c := range []struct {
		chunk int
		rate  int64
		want  int
	}{
		{DefaultChunkBytes, 1e9, DefaultChunkBytes},
		{chunk, 8_000_000, 1_000_000 / 188 * 188},
		{chunk, 1, 188},
	} {
		if got := chunkAtRate(c.chunk, c.rate); got != c.want {
			t.Errorf("chunkAtRate(%d, %d) = %d, want %d", c.chunk, c.rate, got, c.want)
		}
	}
}

func TestCloseCancelsTransfers(t *testing.T) {
	clk := newFakeClock(true)
	s, c := startServer(t, func(s *Server) {
		s.MaxTransfers = 1
		s.SetupDelay = time.Hour
		s.clock = clk
	})
	errs := make(chan error, 1)
	go func() {
		_, err := fetch(context.Background(), c, &vodclusterv1.FetchRequest{TitleId: "sample-001"}, DefaultChunkBytes)
		errs <- err
	}()
	clk.waitEntered(t, 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err == nil {
		t.Fatal("transfer finished although the origin closed")
	}
	if st := s.Stats(); st.Active != 0 || st.Waiting != 0 {
		t.Errorf("after Close: %+v", st)
	}
}

func TestNotStarted(t *testing.T) {
	var s Server
	if _, err := s.ListTitles(context.Background(), &vodclusterv1.ListTitlesRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("ListTitles before Start: %v", err)
	}
	if s.Addr() != "" || s.Catalog() != nil || s.Stats().Transfers != 0 {
		t.Error("unstarted server has state")
	}
}

// A title's file written over in place during a transfer naming its
// version (a `cp` onto it) ends the transfer before a byte read after the
// change is sent, so that a node never keeps a copy made of two versions:
// UNAVAILABLE (the node retries; once the origin has read the file again,
// a retry naming the old version is refused FAILED_PRECONDITION).
func TestFetchEndsWhenTheFileIsWrittenOverInPlace(t *testing.T) {
	s, c, ti, clk, done := startPacedFetch(t)
	clip := readClip(t, "clip-c.ts")
	other := append([]byte(nil), clip...)
	for i := pacedChunk; i < len(other); i += 188 {
		other[i+100] ^= 0xff
	}
	if err := os.WriteFile(ti.Path, other, 0o644); err != nil { // same inode, truncated and written
		t.Fatal(err)
	}
	later(t, ti.Path)
	close(clk.gate)
	r := <-done
	wantCode(t, r.err, codes.Unavailable, `title "sample-003": its file changed since the origin loaded its catalog`)
	if !bytes.Equal(r.got, clip[:len(r.got)]) || len(r.got) > pacedChunk {
		t.Fatalf("%d bytes sent before the refusal; want at most the first pacedChunk, of the old file", len(r.got))
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	_, err := fetch(context.Background(), c, &vodclusterv1.FetchRequest{TitleId: "sample-003", Offset: int64(len(r.got)), IfVersion: ti.Version}, pacedChunk)
	wantCode(t, err, codes.FailedPrecondition, `title "sample-003" is version `)
}

// A title whose file is gone from the origin while its catalog entry is
// still there is NOT_FOUND (a node does not retry it), with or without a
// version.
func TestFetchOfAFileGone(t *testing.T) {
	s, c := startServer(t, nil)
	ti, _ := s.Catalog().Title("sample-001")
	if err := os.Remove(ti.Path); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"", ti.Version} {
		_, err := fetch(context.Background(), c, &vodclusterv1.FetchRequest{TitleId: "sample-001", IfVersion: v}, DefaultChunkBytes)
		wantCode(t, err, codes.NotFound, `title "sample-001": its file `+ti.Path+` is gone from the origin`)
	}
}

// A title whose file is gone is NOT_FOUND at once, with or without a
// version, while every channel is held by another transfer: it does not
// queue for a channel nor pay the setup delay. A file that goes while its
// transfer queues is still found gone once the transfer has a channel
// (after its start: the open fails).
func TestFetchOfAFileGoneTakesNoChannel(t *testing.T) {
	clk := newStepClock()
	s, c := startServer(t, func(s *Server) {
		s.MaxTransfers = 1
		s.SetupDelay = time.Minute
		s.clock = clk
	})
	// A holds the only channel, in its setup delay.
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	streamA, err := c.Fetch(ctxA, &vodclusterv1.FetchRequest{TitleId: "sample-002"})
	if err != nil {
		t.Fatal(err)
	}
	msgsA, endA := recvAll(streamA)
	clk.sleeping(t, "A's setup delay")
	waitStats(t, s, "A on the channel", func(st Stats) bool { return st.Active == 1 })

	gone, _ := s.Catalog().Title("sample-001")
	if err := os.Remove(gone.Path); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"", gone.Version} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := fetch(ctx, c, &vodclusterv1.FetchRequest{TitleId: "sample-001", IfVersion: v}, DefaultChunkBytes)
		cancel()
		wantCode(t, err, codes.NotFound, `title "sample-001": its file `+gone.Path+` is gone from the origin`)
	}
	if st := s.Stats(); st.Active != 1 || st.Waiting != 0 || st.Transfers != 1 {
		t.Fatalf("stats after the fetches of a file gone: %+v; want A's transfer alone", st)
	}
	none(t, msgsA, endA, 0, "A in its setup delay")

	// B queues with its file there; the file goes; B gets the channel
	// when A leaves, starts, and is NOT_FOUND.
	later, _ := s.Catalog().Title("sample-003")
	ctxB, cancelB := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelB()
	streamB, err := c.Fetch(ctxB, &vodclusterv1.FetchRequest{TitleId: "sample-003"})
	if err != nil {
		t.Fatal(err)
	}
	msgsB, endB := recvAll(streamB)
	waitStats(t, s, "B queued", func(st Stats) bool { return st.Waiting == 1 })
	if err := os.Remove(later.Path); err != nil {
		t.Fatal(err)
	}
	cancelA()
	clk.sleeping(t, "B's setup delay")
	close(clk.free)
	if m := next(t, msgsB, endB, "B with the channel"); !m.GetStarted() {
		t.Fatalf("B's first message: %v, want its start", m)
	}
	select {
	case err := <-endB:
		wantCode(t, err, codes.NotFound, `title "sample-003": its file `+later.Path+` is gone from the origin`)
	case m := <-msgsB:
		t.Fatalf("B sent %v after its start, from a file gone", m)
	case <-time.After(10 * time.Second):
		t.Fatal("B did not end within 10 s")
	}
}
