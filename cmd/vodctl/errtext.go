package main

import (
	"fmt"
	"net"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/proto/grpctls"
)

// explain adds to an admin call's error what the operator can do about
// it: give the admin token, or check the manager's address.
func (g *globals) explain(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	e := statusError{st: st, text: st.Message()}
	switch st.Code() {
	case codes.Unauthenticated:
		if g.token == "" {
			e.text += " (the manager has an admin token: give it with --token-file, --token, $VODCTL_TOKEN or $VODCTL_TOKEN_FILE)"
			return e
		}
		e.text += " (the token given is not the manager's admin_token_file)"
		return e
	case codes.Unavailable:
		if strings.HasPrefix(st.Message(), "name resolver error") {
			// gRPC's client found no address for the host: it said only
			// "name resolver error: produced zero addresses".
			host, _, _ := net.SplitHostPort(g.manager)
			e.text = fmt.Sprintf("cannot reach the manager: the host %q of --manager %s does not resolve (check the name, or give an IP address)", host, g.manager)
			return e
		}
		cause := ""
		switch msg := st.Message(); {
		case strings.HasPrefix(msg, "connection error"):
			cause = transportCause(msg)
		case strings.HasPrefix(msg, "write tcp ") || strings.HasPrefix(msg, "read tcp "):
			// The server closed the connection as the client wrote
			// HTTP/2's preface ("write tcp A->B: write: broken pipe").
			cause = closedNoGRPC
		default:
			// The manager's answer (which may quote an error of its own
			// link to the origin), not the client's transport.
		}
		if cause == "" {
			break
		}
		e.text = "cannot reach the manager at " + g.manager + ": " + cause
		switch grpctls.Classify(err) {
		case grpctls.WrongName:
			e.text += fmt.Sprintf(" (the manager's certificate does not name %s: give --manager a name or IP address it holds)", g.manager)
			return e
		case grpctls.Untrusted:
			e.text += fmt.Sprintf(" (the manager's certificate is not trusted for %s: give its CA with --tls-ca or $VODCTL_TLS_CA)", g.manager)
			return e
		case grpctls.ServerPlaintext:
			e.text += fmt.Sprintf(" (the manager at %s speaks plaintext gRPC: leave out --tls and --tls-ca)", g.manager)
			return e
		}
		if !g.tls && g.tlsCA == "" {
			e.text += fmt.Sprintf(" (is the manager running with its gRPC at %s? --manager or $VODCTL_MANAGER; with TLS (grpc_tls_cert_file) add --tls or --tls-ca)", g.manager)
			return e
		}
		e.text += fmt.Sprintf(" (is the manager running with its gRPC at %s? --manager or $VODCTL_MANAGER)", g.manager)
		return e
	case codes.DeadlineExceeded:
		// gRPC's own words vary with when the deadline struck ("context
		// deadline exceeded", "stream terminated by RST_STREAM …"): they
		// add nothing to this.
		e.text = fmt.Sprintf("no answer from the manager at %s within --timeout %s", g.manager, &g.timeout)
		return e
	case codes.Unimplemented:
		if strings.Contains(st.Message(), "unknown service") {
			// Another gRPC server: the origin (cdp, 9100), a node's port.
			e.text = fmt.Sprintf("%s serves gRPC but is no manager (%s): give --manager the manager's grpc_listen, port 9090 by default; the origin listens on 9100", g.manager, st.Message())
			return e
		}
	}
	return e
}

// transportCause is the cause in a gRPC client's transport error
// message ("connection error: desc = \"transport: Error while dialing:
// dial tcp ...: connect: connection refused\""): "dial tcp ...: connect:
// connection refused"; the message itself when it is not of that form.
// A server that does not speak gRPC is said so in plain words (notGRPC),
// not in HTTP/2's ("error reading server preface: http2: frame too
// large").
func transportCause(msg string) string {
	c := strings.TrimPrefix(msg, "connection error: desc = ")
	c = strings.Trim(c, `"`)
	c = strings.TrimPrefix(c, "transport: ")
	c = strings.TrimPrefix(c, "Error while dialing: ")
	c = strings.TrimPrefix(c, "authentication handshake failed: ")
	if plain := notGRPC(c); plain != "" {
		return plain
	}
	if c == "" {
		return msg
	}
	return c
}

// notGRPC says in plain words why a server that took the connection gave
// no gRPC answer, from the gRPC client's transport cause c: it answered
// in another protocol (an HTTP/1.1 or RTSP port: "error reading server
// preface: http2: frame too large"), closed the connection ("... EOF",
// "connection closed before server preface received", a reset) or said
// nothing ("failed to receive server preface within timeout"); "" for
// another cause (a refused connection, a TLS failure).
func notGRPC(c string) string {
	if !strings.Contains(c, "server preface") {
		return ""
	}
	switch {
	case strings.Contains(c, "http2:"):
		return "the server there answered, but not in gRPC: another service's port"
	case strings.Contains(c, "within timeout"):
		return "the server there took the connection but sent no gRPC answer"
	}
	return closedNoGRPC
}

// closedNoGRPC is notGRPC's words for a server that closed the
// connection.
const closedNoGRPC = "the server there closed the connection without a gRPC answer"

// statusError prints a gRPC status as one sentence for the operator, the
// manager's message with vodctl's hint, and the status code last in
// brackets as the docs name it ("... [FAILED_PRECONDITION]"), rather than
// the "rpc error: code = ... desc = ..." of the library; status.Code
// still reads it.
type statusError struct {
	st   *status.Status
	text string // the manager's message, or vodctl's account of a transport error, with a hint
}

// Error returns the text and the status code in brackets.
func (e statusError) Error() string { return e.text + " [" + codeName(e.st.Code()) + "]" }

// codeName is a gRPC status code as the docs and the proto's comments
// name it: FAILED_PRECONDITION for codes.FailedPrecondition.
func codeName(c codes.Code) string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("CODE_%d", uint32(c))
}

// codeNames are the gRPC status codes' canonical names (grpc's
// doc/statuscodes.md), by code.
var codeNames = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
	"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// GRPCStatus returns the status, for status.Code and status.FromError.
func (e statusError) GRPCStatus() *status.Status { return e.st }
