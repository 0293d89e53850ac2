package vodclusterv1

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// ConnectParams is how the cluster's gRPC connections reconnect: the
// manager's and the nodes' to the Origin service, and the nodes' to the
// manager: attempts 0.2 s apart at first, at most 2 s apart (jittered by a
// fifth), so that fills retrying through an origin restart, the manager's
// health checks, and nodes whose manager restarted after a long outage
// find it again within about 2 s of its return (gRPC's default waits up
// to 120 s); a connection attempt gives up after 5 s. Use with
// grpc.WithConnectParams.
var ConnectParams = grpc.ConnectParams{
	Backoff: backoff.Config{
		BaseDelay:  200 * time.Millisecond,
		Multiplier: 1.6,
		Jitter:     0.2,
		MaxDelay:   2 * time.Second,
	},
	MinConnectTimeout: 5 * time.Second,
}
