package cdp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	vodclusterv1 "vodcluster/proto/vodcluster/v1"
)

// stepClock holds every Sleep of a transfer (its setup delay, the pacing
// of each chunk) until the test lets one go (step) or all (free).
type stepClock struct {
	entered chan time.Duration // every Sleep reports here first
	step    chan struct{}      // one token lets one Sleep go
	free    chan struct{}      // closed: Sleeps no longer wait
}

func newStepClock() *stepClock {
	return &stepClock{entered: make(chan time.Duration, 1024), step: make(chan struct{}), free: make(chan struct{})}
}

func (c *stepClock) Now() time.Time { return time.Unix(1_700_000_000, 0) }

func (c *stepClock) Sleep(ctx context.Context, d time.Duration) error {
	select {
	case c.entered <- d:
	default:
	}
	select {
	case <-c.step:
	case <-c.free:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// sleeping waits for the next Sleep to start and returns its duration.
func (c *stepClock) sleeping(t *testing.T, what string) time.Duration {
	t.Helper()
	select {
	case d := <-c.entered:
		return d
	case <-time.After(10 * time.Second):
		t.Fatalf("no transfer reached %s", what)
		return 0
	}
}

// recvAll reads a Fetch stream into a channel, message by message, then
// its end (io.EOF or the error).
func recvAll(stream vodclusterv1.Origin_FetchClient) (<-chan *vodclusterv1.FetchChunk, <-chan error) {
	msgs, end := make(chan *vodclusterv1.FetchChunk, 1024), make(chan error, 1)
	go func() {
		for {
			m, err := stream.Recv()
			if err != nil {
				end <- err
				return
			}
			msgs <- m
		}
	}()
	return msgs, end
}

// next returns the stream's next message, failing the test after 10 s.
func next(t *testing.T, msgs <-chan *vodclusterv1.FetchChunk, end <-chan error, what string) *vodclusterv1.FetchChunk {
	t.Helper()
	select {
	case m := <-msgs:
		return m
	case err := <-end:
		t.Fatalf("%s: the stream ended: %v", what, err)
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: nothing within 10 s", what)
	}
	return nil
}

// none checks that the stream has sent nothing, and sends nothing within
// window (a negative: the window is what is asserted, not a
// synchronisation).
func none(t *testing.T, msgs <-chan *vodclusterv1.FetchChunk, end <-chan error, window time.Duration, what string) {
	t.Helper()
	var timeout <-chan time.Time // nil (never) when window is 0: what came already only
	if window > 0 {
		timeout = time.After(window)
	}
	select {
	case m := <-msgs:
		t.Fatalf("%s: got %v", what, m)
	case err := <-end:
		t.Fatalf("%s: the stream ended: %v", what, err)
	default:
	}
	if timeout == nil {
		return
	}
	select {
	case m := <-msgs:
		t.Fatalf("%s: got %v", what, m)
	case err := <-end:
		t.Fatalf("%s: the stream ended: %v", what, err)
	case <-timeout:
	}
}

// A transfer says it started (a message with no data, marked started, at
// the asked offset) once it has a channel and has paid its setup delay,
// before its first byte, and not while it queues for a channel: a node
// can then tell a transfer stuck before its first byte from one that
// waits its turn (FetchChunk.started).
func TestFetchSaysItStartedOnceItHasAChannel(t *testing.T) {
	const chunk = 100 * 188
	const off = 188 * 1000
	clk := newStepClock()
	s, c := startServer(t, func(s *Server) {
		s.MaxTransfers = 1
		s.SetupDelay = time.Second
		s.TransferRateBps = 80_000_000 // a Sleep before every chunk, the first too
		s.ChunkBytes = chunk
		s.clock = clk
	})
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	streamA, err := c.Fetch(ctxA, &vodclusterv1.FetchRequest{TitleId: "sample-001", Offset: off})
	if err != nil {
		t.Fatal(err)
	}
	msgsA, endA := recvAll(streamA)

	// A holds the channel in its setup delay: nothing sent yet.
	if d := clk.sleeping(t, "its setup delay"); d != time.Second {
		t.Fatalf("first wait %v, want the setup delay", d)
	}
	none(t, msgsA, endA, 200*time.Millisecond, "A during its setup delay")

	// B queues behind A.
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	streamB, err := c.Fetch(ctxB, &vodclusterv1.FetchRequest{TitleId: "sample-002"})
	if err != nil {
		t.Fatal(err)
	}
	msgsB, endB := recvAll(streamB)
	waitStats(t, s, "B queued", func(st Stats) bool { return st.Waiting == 1 && st.Active == 1 })

	// Its setup paid, A says it started, then waits before its first
	// chunk: it holds the channel, marked started, no byte sent.
	clk.step <- struct{}{}
	if m := next(t, msgsA, endA, "A after its setup delay"); !m.GetStarted() || m.GetOffset() != off || len(m.GetData()) != 0 {
		t.Fatalf("A's first message: started %v, offset %d, %d bytes; want started at %d with no data",
			m.GetStarted(), m.GetOffset(), len(m.GetData()), off)
	}
	clk.sleeping(t, "the pacing of its first chunk")
	none(t, msgsA, endA, 200*time.Millisecond, "A held before its first chunk")
	none(t, msgsB, endB, 0, "B queued for the channel")
	if st := s.Stats(); st.Waiting != 1 || st.BytesSent != 0 {
		t.Fatalf("stats with A started and B queued: %+v", st)
	}

	// A leaves: B gets the channel, says it started after its setup delay
	// only, and sends its title whole.
	cancelA()
	if err := <-endA; err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("A's end after its cancel: %v", err)
	}
	if d := clk.sleeping(t, "B's setup delay"); d != time.Second {
		t.Fatalf("B's first wait %v, want the setup delay", d)
	}
	none(t, msgsB, endB, 200*time.Millisecond, "B during its setup delay")
	close(clk.free)
	if m := next(t, msgsB, endB, "B with the channel"); !m.GetStarted() || m.GetOffset() != 0 || len(m.GetData()) != 0 {
		t.Fatalf("B's first message: started %v, offset %d, %d bytes; want started at 0 with no data",
			m.GetStarted(), m.GetOffset(), len(m.GetData()))
	}
	var got bytes.Buffer
	take := func(m *vodclusterv1.FetchChunk) {
		if m.GetStarted() || m.GetOffset() != int64(got.Len()) || len(m.GetData()) == 0 {
			t.Fatalf("B's chunk: started %v at %d with %d bytes, after %d bytes", m.GetStarted(), m.GetOffset(), len(m.GetData()), got.Len())
		}
		got.Write(m.GetData())
	}
	for done := false; !done; {
		select {
		case m := <-msgsB:
			take(m)
		case err := <-endB:
			if !errors.Is(err, io.EOF) {
				t.Fatalf("B's end: %v", err)
			}
			done = true
		case <-time.After(10 * time.Second):
			t.Fatalf("B's transfer not done within 10 s (%d bytes)", got.Len())
		}
	}
	for len(msgsB) > 0 { // sent before the end, picked after it
		take(<-msgsB)
	}
	if clip := readClip(t, "clip-b.ts"); !bytes.Equal(got.Bytes(), clip) {
		t.Fatalf("B got %d bytes that differ from its clip's %d", got.Len(), len(clip))
	}
}
