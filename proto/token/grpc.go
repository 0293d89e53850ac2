package token

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"

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
