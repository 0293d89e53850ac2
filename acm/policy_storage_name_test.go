package acm

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// SetPolicy given the name of a storage policy (which vodctl policy
// lists as available, under the storage policy) says it is one, set in
// the manager's config and not at run time, instead of "unknown policy":
// an operator who read the list took it for a typo. The scheduling
// policy stays.
func TestSetPolicyToAStoragePolicyNamesIt(t *testing.T) {
	e := newManager(t, "", nil)
	ctx := context.Background()
	for _, name := range []string{"lru", "w-tinylfu", "gdsf"} {
		_, err := e.admin.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: name})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "storage policy") ||
			!strings.Contains(err.Error(), "storage.policy") || strings.Contains(err.Error(), "unknown policy") {
			t.Errorf("set %s: %v, want InvalidArgument naming it a storage policy set in storage.policy", name, err)
		}
	}
	if p, err := e.admin.GetPolicy(ctx, &pb.GetPolicyRequest{}); err != nil || p.Policy != "lall" {
		t.Fatalf("policy after the refusals: %v %v, want lall", p, err)
	}
}
