package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	v1 "vodcluster/proto/vodcluster/v1"
)

// refusingAdmin refuses a policy change as a manager does a change it
// cannot make, and answers vodctl nodes only once vodctl gave up.
type refusingAdmin struct{ v1.UnimplementedAdminServer }

func (refusingAdmin) SetPolicy(context.Context, *v1.SetPolicyRequest) (*v1.PolicyInfo, error) {
	return nil, status.Error(codes.FailedPrecondition, "the policy is changed on the active manager")
}

func (refusingAdmin) ListNodes(ctx context.Context, _ *v1.ListNodesRequest) (*v1.ListNodesResponse, error) {
	<-ctx.Done() // vodctl's --timeout
	return nil, ctx.Err()
}

// vodctl's error line is one sentence for the operator, the status code
// last in brackets as the docs name it; it began with the code's Go name
// ("FailedPrecondition: ...") and, for a manager it could not reach,
// quoted gRPC's "connection error: desc = \"transport: Error while
// dialing: ...\"". Exit status 1 all the same.
func TestErrorLineReadsAsASentence(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	v1.RegisterAdminServer(srv, refusingAdmin{})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	addr := lis.Addr().String()

	code, _, stderr := vodctlRun(addr, "policy", "rr")
	if want := "vodctl: the policy is changed on the active manager [FAILED_PRECONDITION]\n"; code != 1 || stderr != want {
		t.Errorf("refused: exit %d, %q; want 1 and %q", code, stderr, want)
	}

	code, _, stderr = vodctlRun(addr, "--timeout", "300ms", "nodes")
	if want := "vodctl: no answer from the manager at " + addr + " within --timeout 300ms [DEADLINE_EXCEEDED]\n"; code != 1 || stderr != want {
		t.Errorf("no answer: exit %d, %q; want 1 and %q", code, stderr, want)
	}

	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	goneAddr := gone.Addr().String()
	gone.Close()
	code, _, stderr = vodctlRun(goneAddr, "nodes")
	if want := "vodctl: cannot reach the manager at " + goneAddr + ": dial tcp " + goneAddr + ": connect: connection refused (is the manager running with its gRPC at " + goneAddr + "?"; code != 1 || !strings.HasPrefix(stderr, want) ||
		!strings.HasSuffix(stderr, ") [UNAVAILABLE]\n") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("no manager: exit %d, %q; want 1 and a line beginning %q", code, stderr, want)
	}
	for _, jargon := range []string{"rpc error", "desc =", "transport:", "Unavailable:"} {
		if strings.Contains(stderr, jargon) {
			t.Errorf("no manager: %q in %q", jargon, stderr)
		}
	}
}

// The status code in brackets is the code's canonical name (CANCELLED,
// as grpc spells it, not CANCELED), and a code past them is CODE_N.
func TestCodeName(t *testing.T) {
	for c, want := range map[codes.Code]string{codes.Canceled: "CANCELLED", codes.FailedPrecondition: "FAILED_PRECONDITION",
		codes.Unauthenticated: "UNAUTHENTICATED", codes.Code(17): "CODE_17"} {
		if got := codeName(c); got != want {
			t.Errorf("codeName(%d) = %q, want %q", c, got, want)
		}
	}
}

// A --manager port whose server is no gRPC one (an RTSP or HTTP/1.1 port
// that answers, one that closes at once) gives the plain line of a closed
// port, "cannot reach the manager at ADDR: " and what the server did,
// not gRPC's and HTTP/2's words ("error reading server preface: http2:
// frame too large, note that the frame header looked like an HTTP/1.1
// header").
func TestManagerPortNotGRPCIsPlain(t *testing.T) {
	answers := serveOnce(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		r.ReadString('\n') // HTTP/2's preface: "PRI * HTTP/2.0"
		c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
		io.Copy(io.Discard, r) // until the client gives up
	})
	closes := serveOnce(t, func(c net.Conn) {
		bufio.NewReader(c).ReadString('\n')
	})
	closesAtOnce := serveOnce(t, func(net.Conn) {})
	for _, c := range []struct{ addr, why string }{
		{answers, "the server there answered, but not in gRPC: another service's port"},
		{closes, "the server there closed the connection without a gRPC answer"},
		{closesAtOnce, "the server there closed the connection without a gRPC answer"},
	} {
		code, _, stderr := vodctlRun(c.addr, "nodes")
		want := "vodctl: cannot reach the manager at " + c.addr + ": " + c.why + " (is the manager running with its gRPC at " + c.addr + "?"
		if code != 1 || !strings.HasPrefix(stderr, want) || !strings.HasSuffix(stderr, ") [UNAVAILABLE]\n") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("--manager %s: exit %d, %q; want 1 and a line beginning %q", c.addr, code, stderr, want)
		}
		for _, jargon := range []string{"preface", "http2", "frame", "transport:", "desc ="} {
			if strings.Contains(stderr, jargon) {
				t.Errorf("--manager %s: %q in %q", c.addr, jargon, stderr)
			}
		}
	}
}
