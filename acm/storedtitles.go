package acm

import (
	"fmt"

	pb "vodcluster/proto/vodcluster/v1"
)

// storedTitleFault says what is wrong with a title a node says it holds
// (RegisterRequest.titles, LoadReport.titles), or "" when nothing is: its
// id must be a title id ([A-Za-z0-9._-]{1,128}: a node's store holds no
// other), its bytes not negative, stored_bytes no more than size_bytes
// (when known: a fill from an origin that gives no size has 0). A
// malformed one would enter the replica view as it is: a copy of negative
// or impossible size listed as stored (vodctl placement), counted in the
// node's disk figures and offered to viewers as complete.
func storedTitleFault(t *pb.StoredTitle) string {
	switch {
	case !idPattern.MatchString(t.GetTitleId()):
		return fmt.Sprintf("stored title %q: title_id wants [A-Za-z0-9._-]{1,128}", clip(t.GetTitleId()))
	case t.GetSizeBytes() < 0 || t.GetStoredBytes() < 0 || t.GetSizeBytes() > 0 && t.GetStoredBytes() > t.GetSizeBytes():
		return fmt.Sprintf("stored title %q: stored_bytes %d and size_bytes %d: need 0 <= stored_bytes <= size_bytes (size_bytes 0: unknown)",
			t.GetTitleId(), t.GetStoredBytes(), t.GetSizeBytes())
	}
	return ""
}

// checkStoredTitles returns the fault of the first malformed title of a
// registration, for INVALID_ARGUMENT, or "".
func checkStoredTitles(ts []*pb.StoredTitle) string {
	for _, t := range ts {
		if why := storedTitleFault(t); why != "" {
			return why
		}
	}
	return ""
}

// badStoredTitles counts the malformed titles of a load report and
// returns the fault of the first (storedTitleFault): the report is applied
// without them (refusing it would end the node's stream at every report,
// and the node would be declared dead for one bad entry).
func badStoredTitles(ts []*pb.StoredTitle) (n int, first string) {
	for _, t := range ts {
		if why := storedTitleFault(t); why != "" {
			if n == 0 {
				first = why
			}
			n++
		}
	}
	return n, first
}
