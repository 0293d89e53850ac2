package acm

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"vodcluster/proto/token"
	pb "vodcluster/proto/vodcluster/v1"
)

func dialWith(t *testing.T, addr string, bearer string) *grpc.ClientConn {
	t.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if bearer != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(token.Bearer(bearer)))
	}
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// Only holders of the cluster secret may act as nodes, and with an admin
// token set only its holders may use the Admin API.
func TestGRPCAuthentication(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.AdminToken = "operator-token-1234" })
	ctx := context.Background()
	reg := &pb.RegisterRequest{NodeId: "rogue", RtspAddr: "127.0.0.1:1", Capacity: &pb.NodeCapacity{EgressBps: 1e9}}

	for name, bearer := range map[string]string{"none": "", "wrong": token.NodeCredential([]byte("another-secret-of-16"))} {
		nc := pb.NewNodeControlClient(dialWith(t, e.m.GRPCAddr(), bearer))
		if _, err := nc.Register(ctx, reg); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("Register with %s credential: %v, want Unauthenticated", name, err)
		}
		hb, err := nc.Heartbeat(ctx)
		if err == nil {
			_, err = hb.Recv()
		}
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("Heartbeat with %s credential: %v, want Unauthenticated", name, err)
		}
	}
	if _, err := pb.NewAdminClient(dialWith(t, e.m.GRPCAddr(), "")).ListNodes(ctx, &pb.ListNodesRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("Admin without token: %v", err)
	}
	nodes, err := pb.NewAdminClient(dialWith(t, e.m.GRPCAddr(), "operator-token-1234")).ListNodes(ctx, &pb.ListNodesRequest{})
	if err != nil {
		t.Fatalf("Admin with token: %v", err)
	}
	if len(nodes.Nodes) != 0 {
		t.Fatalf("an unauthenticated node registered: %v", nodes.Nodes)
	}
	// The node credential is accepted for NodeControl.
	if _, err := e.nc.Register(ctx, reg); err != nil {
		t.Fatalf("Register with the node credential: %v", err)
	}
}
