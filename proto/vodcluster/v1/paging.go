package vodclusterv1

import (
	"context"
	"fmt"
	"sort"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TitlePageSize is the page size ListAllTitles asks for: 2,000 titles
// make an answer of about 200 KB with the usual ids and names, and stay
// under gRPC's default 4 MB receive limit with names of up to about
// 1,500 bytes.
const TitlePageSize = 2000

// maxTitlePages bounds ListAllTitles: 50 million titles at TitlePageSize.
const maxTitlePages = 25000

// TitlePage returns the bounds [start, end) of the page req asks for in a
// catalog of n titles sorted by id (id(i) is the i-th id), and the
// next_page_token of its answer (empty on the last page): the titles with
// an id after req.page_token, at most req.page_size of them (0 = all). It
// returns an INVALID_ARGUMENT status error for a negative page_size.
func TitlePage(n int, id func(i int) string, req *ListTitlesRequest) (start, end int, next string, err error) {
	size := int(req.GetPageSize())
	if size < 0 {
		return 0, 0, "", status.Errorf(codes.InvalidArgument, "page_size %d: want 0 (every title) or more", size)
	}
	if tok := req.GetPageToken(); tok != "" {
		start = sort.Search(n, func(i int) bool { return id(i) > tok })
	}
	end = n
	if size > 0 && n-start > size {
		end = start + size
		next = id(end - 1)
	}
	return start, end, next, nil
}

// ListAllTitles reads a whole catalog from list (an Origin or Admin
// client's ListTitles) a page of TitlePageSize titles at a time, and
// returns the titles in id order. A server that predates paging answers
// the first request with every title and no next page. It returns the
// first call's error, or an error when the server's next_page_token does
// not move forward (the listing would never end).
func ListAllTitles(ctx context.Context, list func(context.Context, *ListTitlesRequest, ...grpc.CallOption) (*ListTitlesResponse, error), opts ...grpc.CallOption) ([]*Title, error) {
	var out []*Title
	token := ""
	for range maxTitlePages {
		res, err := list(ctx, &ListTitlesRequest{PageSize: TitlePageSize, PageToken: token}, opts...)
		if err != nil {
			return nil, err
		}
		out = append(out, res.GetTitles()...)
		next := res.GetNextPageToken()
		if next == "" {
			return out, nil
		}
		if next <= token {
			return nil, fmt.Errorf("list titles: next_page_token %q does not move past %q", next, token)
		}
		token = next
	}
	return nil, fmt.Errorf("list titles: more than %d pages", maxTitlePages)
}
