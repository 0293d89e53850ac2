package acm

import (
	"fmt"
	"strings"

	"google.golang.org/grpc/status"
)

// passedNote says, in the answer to an operator's prefetch of title
// naming no node, the orders of it left on nodes that cannot take a fill
// now (queuedNodeLocked: passed, why for each node, passedIDs, the
// nodes): ordered (or retried) there too once the node can fill, a
// second copy unless the operator cancels it, with the command that
// cancels each. "" when none was passed over.
func passedNote(title string, passed, passedIDs []string) string {
	if len(passed) == 0 {
		return ""
	}
	cancel := make([]string, len(passedIDs))
	for i, n := range passedIDs {
		cancel[i] = fmt.Sprintf("vodctl evict %s %s", title, n)
	}
	return fmt.Sprintf("; queued already where it cannot be filled now, left queued there (ordered there too once it can be filled; to cancel: %s): %s",
		strings.Join(cancel, ", "), strings.Join(passed, "; "))
}

// withPassed adds passedNote to err, the refusal of a prefetch naming no
// node that passed orders over, keeping its code: those orders stay
// whatever the answer, and the operator learns of them from it alone.
func withPassed(err error, title string, passed, passedIDs []string) error {
	note := passedNote(title, passed, passedIDs)
	if err == nil || note == "" {
		return err
	}
	s := status.Convert(err)
	return status.Error(s.Code(), s.Message()+note)
}
