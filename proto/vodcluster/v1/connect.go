package vodclusterv1

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/keepalive"
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

// Keepalive is how the cluster's gRPC clients (the nodes' to the origin
// and to the manager, the manager's to the origin) find a peer that
// stopped answering without closing the connection (a stopped or hung
// process, a network that drops packets): an HTTP/2 PING after 10 s
// without traffic (gRPC's minimum), the connection closed when its answer
// does not come within 10 s, idle connections included. A fill streaming
// from a stalled origin then fails within about 20 s and is retried or
// kept as a partial (fill_retry_for), instead of hanging; a fill queued
// for an origin channel is not affected (a live origin answers PINGs
// while it queues). Every server these clients reach must allow it
// (KeepaliveEnforcement). Use with grpc.WithKeepaliveParams.
var Keepalive = keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 10 * time.Second, PermitWithoutStream: true}

// KeepaliveEnforcement is the PING policy of the cluster's gRPC servers
// (the manager's and the origin's): clients may ping every 5 s, idle
// ones too (gRPC's default closes a client pinging more often than every
// 5 min with GOAWAY "too_many_pings"). Use with
// grpc.KeepaliveEnforcementPolicy.
var KeepaliveEnforcement = keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}
