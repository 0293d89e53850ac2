package acm

import (
	"context"
	"testing"

	pb "vodcluster/proto/vodcluster/v1"
)

// Sessions listed for a subscriber the users file does not know are
// marked so (user_unknown): a misspelt name read as a subscriber with
// nothing playing. A known subscriber with no session is not.
func TestSessionsOfAnUnknownSubscriberSaySo(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{})
	ctx := context.Background()
	for user, unknown := range map[string]bool{"nobody": true, "kid": false} {
		ls, err := e.admin.ListSessions(ctx, &pb.ListSessionsRequest{User: user})
		if err != nil || len(ls.GetSessions()) != 0 || ls.GetUserUnknown() != unknown {
			t.Errorf("sessions of %s: %v %v, want none, user_unknown %v", user, ls, err, unknown)
		}
	}
}
