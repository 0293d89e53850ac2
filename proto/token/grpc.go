package token

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// nodeCredentialLabel separates the node credential from every other use
// of the cluster secret (admission tokens, Digest nonces).
const nodeCredentialLabel = "vodcluster.v1 NodeControl"

// NodeCredential returns the bearer credential a VOD node presents on
// every NodeControl call: hex(HMAC-SHA256(secret, label)). Only holders of
// the cluster secret (the manager and the nodes) can make it; it carries
// no expiry, so it belongs on a private network or under TLS.
func NodeCredential(secret []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(nodeCredentialLabel))
	return hex.EncodeToString(m.Sum(nil))
}

// originCredentialLabel separates the origin credential from the node
// credential and every other use of the cluster secret.
const originCredentialLabel = "vodcluster.v1 Origin"

// OriginCredential returns the bearer credential the manager and the VOD
// nodes present on every Origin call (catalog reads, fills):
// hex(HMAC-SHA256(secret, label)), another label than NodeCredential's,
// so that neither credential is the other. An origin given the cluster
// secret asks every Origin call for it (cdp.Server.Credential); it
// carries no expiry, so it belongs on a private network or under TLS.
func OriginCredential(secret []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(originCredentialLabel))
	return hex.EncodeToString(m.Sum(nil))
}

// Bearer is a gRPC per-RPC credential that sends "authorization: Bearer
// <token>" (grpc.WithPerRPCCredentials). It does not demand transport
// security, since clusters often run gRPC on a private network.
type Bearer string

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (b Bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials; it
// returns false.
func (Bearer) RequireTransportSecurity() bool { return false }

// CheckBearer verifies that the incoming gRPC call in ctx carries
// "authorization: Bearer <want>", in constant time. It returns a gRPC
// Unauthenticated status error otherwise.
func CheckBearer(ctx context.Context, want string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		got, ok := strings.CutPrefix(v, "Bearer ")
		if ok && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1 {
			return nil
		}
	}
	return status.Error(codes.Unauthenticated, "missing or wrong bearer credential")
}

// Authorize returns the gRPC server options that run check on every call,
// unary and streaming, with the call's context and full method name
// ("/vodcluster.v1.Admin/ListNodes"); a call check refuses is answered
// with check's error (token.CheckBearer's UNAUTHENTICATED) and never
// reaches its handler.
func Authorize(check func(ctx context.Context, method string) error) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := check(ctx, info.FullMethod); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := check(ss.Context(), info.FullMethod); err != nil {
				return err
			}
			return h(srv, ss)
		}),
	}
}
