package cdp

import (
	"bytes"
	"context"
	"testing"

	"google.golang.org/grpc/codes"

	vodclusterv1 "vodcluster/proto/vodcluster/v1"
)

// A title's file touched during a transfer naming its version (its bytes
// the same) ends the transfer, UNAVAILABLE: the origin cannot vouch for
// the bytes until it has read the file again, and GetTitle says so too.
// Once it has, the version is the same and the transfer resumed from
// where it ended, naming it, is served the rest of the same bytes.
func TestFetchOfATouchedFileResumesOnceReadAgain(t *testing.T) {
	s, c, ti, clk, done := startPacedFetch(t)
	clip := readClip(t, "clip-c.ts")
	later(t, ti.Path)
	close(clk.gate)
	r := <-done
	wantCode(t, r.err, codes.Unavailable, `title "sample-003": its file changed since the origin loaded its catalog (`)
	wantCode(t, r.err, codes.Unavailable, "the origin is reading it again; retry")
	if len(r.got) >= len(clip) {
		t.Fatalf("the whole title sent (%d bytes) though its file was touched mid-transfer", len(r.got))
	}
	ctx := context.Background()
	_, err := c.GetTitle(ctx, &vodclusterv1.GetTitleRequest{TitleId: "sample-003"})
	wantCode(t, err, codes.Unavailable, `title "sample-003": its file changed since the origin loaded its catalog (`)

	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if now, _ := s.Catalog().Title("sample-003"); now.Version != ti.Version {
		t.Fatalf("version after the touched file was read again: %s, want %s", now.Version, ti.Version)
	}
	rest, err := fetch(ctx, c, &vodclusterv1.FetchRequest{TitleId: "sample-003", Offset: int64(len(r.got)), IfVersion: ti.Version}, pacedChunk)
	if err != nil {
		t.Fatalf("fetch resumed after the file was read again: %v", err)
	}
	if got := append(r.got, rest...); !bytes.Equal(got, clip) {
		t.Fatalf("%d bytes over the two transfers, not the file's %d", len(got), len(clip))
	}
	if ti2, err := c.GetTitle(ctx, &vodclusterv1.GetTitleRequest{TitleId: "sample-003"}); err != nil || ti2.GetVersion() != ti.Version {
		t.Fatalf("GetTitle after the file was read again: %v, %v", ti2, err)
	}
}

// pacedChunk is the chunk of startPacedFetch's server, bytes.
const pacedChunk = 100 * 188

// fetchResult is a fetch's bytes and its end.
type fetchResult struct {
	got []byte
	err error
}

// startPacedFetch starts an origin whose transfers are paced on a gated
// fake clock in chunks of pacedChunk, and a fetch of sample-003 (clip-c)
// naming its version; it returns once the fetch has read its first chunk
// and waits for its pace (close clk.gate to let it go on). done gets the
// fetch's bytes and end.
func startPacedFetch(t *testing.T) (*Server, vodclusterv1.OriginClient, Title, *fakeClock, <-chan fetchResult) {
	t.Helper()
	clk := newFakeClock(true)
	s, c := startServer(t, func(s *Server) {
		s.TransferRateBps = 80_000_000
		s.ChunkBytes = pacedChunk
		s.clock = clk
	})
	ti, _ := s.Catalog().Title("sample-003")
	done := make(chan fetchResult, 1)
	go func() {
		got, err := fetch(context.Background(), c, &vodclusterv1.FetchRequest{TitleId: "sample-003", IfVersion: ti.Version}, pacedChunk)
		done <- fetchResult{got, err}
	}()
	clk.waitEntered(t, 1) // the first chunk read, paced
	return s, c, ti, clk, done
}
