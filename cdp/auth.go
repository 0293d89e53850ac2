package cdp

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	"vodcluster/proto/monotime"
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
	err := token.CheckBearer(ctx, s.Credential)
	if err != nil {
		// at warn once per refusedLogEvery: a node with another secret
		// retries its fills and catalog reads
		now := monotime.Now()
		if last := s.refusedLogged.Load(); now-last >= int64(refusedLogEvery) && s.refusedLogged.CompareAndSwap(last, now) {
			from := ""
			if p, ok := peer.FromContext(ctx); ok {
				from = p.Addr.String()
			}
			s.log.Warn("origin call refused: no or wrong credential (the caller's secret_file must hold the cluster secret this origin's secret_file holds)", "method", method, "from", from)
		}
	}
	return err
}

// refusedLogEvery is how often, at most, the origin logs a refused call.
const refusedLogEvery = 10 * time.Second

// authOptions returns the server options that run authorize on every
// call; none when no credential is asked.
func (s *Server) authOptions() []grpc.ServerOption {
	if s.Credential == "" {
		return nil
	}
	return token.Authorize(s.authorize)
}
