package cdp

import (
	"context"
	"strings"

	"google.golang.org/grpc"

	"vodcluster/proto/token"
)

// originPrefix is the gRPC method prefix of the Origin service.
const originPrefix = "/vodcluster.v1.Origin/"

// authorize checks the caller of method: an Origin call must carry
// Server.Credential when one is set (token.CheckBearer: UNAUTHENTICATED
// otherwise); the health service's calls need none.
func (s *Server) authorize(ctx context.Context, method string) error {
	if s.Credential == "" || !strings.HasPrefix(method, originPrefix) {
		return nil
	}
	return token.CheckBearer(ctx, s.Credential)
}

// authOptions returns the server options that run authorize on every
// call; none when no credential is asked.
func (s *Server) authOptions() []grpc.ServerOption {
	if s.Credential == "" {
		return nil
	}
	return token.Authorize(s.authorize)
}
