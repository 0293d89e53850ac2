package cdp

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"vodcluster/proto/token"
	vodclusterv1 "vodcluster/proto/vodcluster/v1"
)

// An origin given a credential answers the Origin calls that carry it
// only: without it, or with another (the node credential of the same
// secret), the catalog and the titles' bytes are UNAUTHENTICATED (anyone
// who reached the port listed the catalog and fetched every title). The
// health service stays open for the operator's checks.
func TestOriginAsksForTheCredential(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	cred := token.OriginCredential(secret)
	s, anon := startServer(t, func(s *Server) { s.Credential = cred })
	ctx := context.Background()
	with := func(b string) vodclusterv1.OriginClient {
		conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithPerRPCCredentials(token.Bearer(b)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return vodclusterv1.NewOriginClient(conn)
	}
	for name, c := range map[string]vodclusterv1.OriginClient{"none": anon, "the node credential": with(token.NodeCredential(secret)), "another secret's": with(token.OriginCredential([]byte("another secret of 32 bytes......")))} {
		_, err := c.ListTitles(ctx, &vodclusterv1.ListTitlesRequest{})
		wantCode(t, err, codes.Unauthenticated, "bearer credential")
		_, err = fetch(ctx, c, &vodclusterv1.FetchRequest{TitleId: "sample-001"}, DefaultChunkBytes)
		if err == nil {
			t.Fatalf("%s: fetched", name)
		}
		wantCode(t, err, codes.Unauthenticated, "bearer credential")
	}
	good := with(cred)
	if res, err := good.ListTitles(ctx, &vodclusterv1.ListTitlesRequest{}); err != nil || len(res.GetTitles()) != 20 {
		t.Fatalf("with the credential: %d titles, %v", len(res.GetTitles()), err)
	}
	if b, err := fetch(ctx, good, &vodclusterv1.FetchRequest{TitleId: "sample-001"}, DefaultChunkBytes); err != nil || int64(len(b)) != s.Catalog().Titles()[0].SizeBytes {
		t.Fatalf("fetch with the credential: %d bytes, %v", len(b), err)
	}
	h, err := healthpb.NewHealthClient(mustConn(t, s.Addr())).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health without a credential: %v, %v", h, err)
	}
}
