package acm

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"vodcluster/proto/token"
	pb "vodcluster/proto/vodcluster/v1"
)

// gRPC method prefixes of the manager's services.
const (
	nodeControlPrefix = "/vodcluster.v1.NodeControl/"
	adminPrefix       = "/vodcluster.v1.Admin/"
)

// authorize checks the caller of method: a NodeControl call must carry the
// node credential derived from the cluster secret (token.NodeCredential),
// an Admin call the AdminToken when one is set. It returns a gRPC
// Unauthenticated error otherwise. An Admin call with a bearer while no
// AdminToken is set is answered with the header pb.HeaderAdminAuth
// pb.AdminAuthNone: its token was not checked.
func (m *Manager) authorize(ctx context.Context, method string) error {
	switch {
	case strings.HasPrefix(method, nodeControlPrefix):
		return token.CheckBearer(ctx, m.nodeCredential)
	case strings.HasPrefix(method, adminPrefix) && m.AdminToken != "":
		return token.CheckBearer(ctx, m.AdminToken)
	case strings.HasPrefix(method, adminPrefix):
		if md, _ := metadata.FromIncomingContext(ctx); len(md.Get("authorization")) > 0 {
			// The caller's token was not checked: said in a header, so
			// that vodctl --token does not pass for authenticated.
			_ = grpc.SetHeader(ctx, metadata.Pairs(pb.HeaderAdminAuth, pb.AdminAuthNone))
		}
	}
	return nil
}

// grpcAuth returns the server options that run authorize on every call.
func (m *Manager) grpcAuth() []grpc.ServerOption { return token.Authorize(m.authorize) }
