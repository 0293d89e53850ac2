package acm

import (
	"context"
	"strings"

	"google.golang.org/grpc"

	"vodcluster/proto/token"
)

// gRPC method prefixes of the manager's services.
const (
	nodeControlPrefix = "/vodcluster.v1.NodeControl/"
	adminPrefix       = "/vodcluster.v1.Admin/"
)

// authorize checks the caller of method: a NodeControl call must carry the
// node credential derived from the cluster secret (token.NodeCredential),
// an Admin call the AdminToken when one is set. It returns a gRPC
// Unauthenticated error otherwise.
func (m *Manager) authorize(ctx context.Context, method string) error {
	switch {
	case strings.HasPrefix(method, nodeControlPrefix):
		return token.CheckBearer(ctx, m.nodeCredential)
	case strings.HasPrefix(method, adminPrefix) && m.AdminToken != "":
		return token.CheckBearer(ctx, m.AdminToken)
	}
	return nil
}

// grpcAuth returns the server options that run authorize on every call.
func (m *Manager) grpcAuth() []grpc.ServerOption { return token.Authorize(m.authorize) }
