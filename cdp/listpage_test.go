package cdp

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	vodclusterv1 "vodcluster/proto/vodcluster/v1"
)

// bigCatalogDir writes a catalog of n titles on one sample clip, with
// names long enough that the whole catalog in one message passes gRPC's
// default 4 MB receive limit when n is 40,000 or more.
func bigCatalogDir(t *testing.T, n int) string {
	t.Helper()
	dir := sampleDir(t)
	f, err := os.Create(filepath.Join(dir, "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "titles:")
	long := strings.Repeat("x", 60)
	for i := range n {
		fmt.Fprintf(w, "  - {id: t%06d, name: \"Title %d %s\", file: clip-a.ts}\n", i, i, long)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A catalog too large for one gRPC message (the default 4 MB receive
// limit) is read whole a page at a time, in id order; a page_token
// continues after it, and a negative page_size is refused.
func TestListTitlesPaged(t *testing.T) {
	const n = 50000
	dir := bigCatalogDir(t, n)
	_, c := startServer(t, func(s *Server) { s.Dir = dir })
	ctx := context.Background()

	if _, err := c.ListTitles(ctx, &vodclusterv1.ListTitlesRequest{}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("the whole catalog in one answer: %v, want it past the 4 MB receive limit (the test's premise)", err)
	}
	all, err := vodclusterv1.ListAllTitles(ctx, c.ListTitles)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != n {
		t.Fatalf("%d titles, want %d", len(all), n)
	}
	for i, tt := range all {
		if want := fmt.Sprintf("t%06d", i); tt.GetId() != want || tt.GetBitrateBps() <= 0 {
			t.Fatalf("title %d: %v, want id %s with a bitrate", i, tt, want)
		}
	}

	res, err := c.ListTitles(ctx, &vodclusterv1.ListTitlesRequest{PageSize: 3, PageToken: "t000010"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tt := range res.GetTitles() {
		ids = append(ids, tt.GetId())
	}
	if got := strings.Join(ids, ","); got != "t000011,t000012,t000013" || res.GetNextPageToken() != "t000013" {
		t.Errorf("page after t000010: %s next %q, want t000011,t000012,t000013 next t000013", got, res.GetNextPageToken())
	}
	res, err = c.ListTitles(ctx, &vodclusterv1.ListTitlesRequest{PageSize: 5, PageToken: "t049997"})
	if err != nil || len(res.GetTitles()) != 2 || res.GetNextPageToken() != "" {
		t.Errorf("last page: %d titles, next %q, %v; want 2 and no next page", len(res.GetTitles()), res.GetNextPageToken(), err)
	}
	if _, err := c.ListTitles(ctx, &vodclusterv1.ListTitlesRequest{PageSize: -1}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("page_size -1: %v, want InvalidArgument", err)
	}
}
