package vodclusterv1

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
)

// ListAllTitles follows next_page_token to the last page, takes an
// answer without one (a server that predates paging) as the whole
// catalog, and stops with an error at a token that does not move forward.
func TestListAllTitles(t *testing.T) {
	ids := []string{"a", "b", "c", "d", "e"}
	pager := func(_ context.Context, req *ListTitlesRequest, _ ...grpc.CallOption) (*ListTitlesResponse, error) {
		req.PageSize = 2 // smaller pages than asked for: the caller follows the tokens
		start, end, next, err := TitlePage(len(ids), func(i int) string { return ids[i] }, req)
		if err != nil {
			return nil, err
		}
		res := &ListTitlesResponse{NextPageToken: next}
		for _, id := range ids[start:end] {
			res.Titles = append(res.Titles, &Title{Id: id})
		}
		return res, nil
	}
	got, err := ListAllTitles(context.Background(), pager)
	if err != nil || len(got) != len(ids) || got[0].GetId() != "a" || got[4].GetId() != "e" {
		t.Fatalf("paged listing: %v, %v", got, err)
	}
	stuck := func(context.Context, *ListTitlesRequest, ...grpc.CallOption) (*ListTitlesResponse, error) {
		return &ListTitlesResponse{Titles: []*Title{{Id: "a"}}, NextPageToken: "a"}, nil
	}
	if _, err := ListAllTitles(context.Background(), stuck); err == nil || !strings.Contains(err.Error(), "does not move") {
		t.Fatalf("a token that does not move: %v, want an error", err)
	}
}
