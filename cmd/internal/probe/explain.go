package probe

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/bluenviron/gortsplib/v4/pkg/liberrors"
)

// Explain makes a play's error one plain line for the operator
// (ExplainedError), as vodctl play and vodcluster up --play print it: without the probe package's "probe: " prefix, a refusal
// as who refused which request with its RTSP status code and reason
// ("the manager at HOST has no title \"x\": RTSP 404 Not Found (no such
// title)", not "probe: DESCRIBE: bad status code: 404 (...)"), a port
// nothing listens on as "cannot reach HOST", and what the operator can do
// about the usual mistakes of a URL's scheme and port: rtsps:// to a
// plain RTSP port (it said only "tls: first record does not look like a
// TLS handshake"), and a port that is not RTSP, such as the front door's
// HTTP one (it said only "DESCRIBE: EOF") or the manager's gRPC one
// ("connection reset by peer"). server is the host that answered
// DESCRIBE ("" when none did): a connection closed after that (a node
// that died or ended the session) is no wrong port, and a refusal of
// SETUP or PLAY is that host's. A DESCRIBE that failed at the node the
// front door redirected to (RedirectedError) is the node's, named
// "the node at NODE (the front door's redirect)", and one that could not
// reach it says the node's advertised address must be reachable from
// players: it read as the front door's ("cannot reach the manager at
// FRONT: dial tcp NODE: ...", "the manager at FRONT has no title").
func Explain(err error, rawURL, server string) error {
	host, title := Redacted(rawURL), ""
	if u, perr := url.Parse(rawURL); perr == nil && u.Host != "" {
		host = u.Host
		title, _, _ = strings.Cut(strings.TrimPrefix(u.Path, "/vod/"), "/")
	}
	text := strings.TrimPrefix(err.Error(), "probe: ")
	var bad liberrors.ErrClientBadStatusCode
	var rec tls.RecordHeaderError
	var op *net.OpError
	who := "the manager at " + host
	var redirected *RedirectedError
	if errors.As(err, &redirected) {
		who = "the node at " + redirected.Host + " (the front door's redirect)"
	}
	switch {
	case errors.As(err, &bad):
		text = refusalLine(text, bad, who, server, title)
	case redirected != nil && errors.As(err, &op) && op.Op == "dial":
		text = fmt.Sprintf("cannot reach %s: %v (the front door redirects players to the address the node advertises, its advertise_host and rtsp_listen's port, rtsps_listen's over RTSPS: is the node running, and is that address reachable from players?)", who, op)
	case redirected != nil:
		text = who + ": " + text
	case errors.As(err, &rec):
		text += fmt.Sprintf(" (%s answers without TLS: give it an rtsp:// URL, or the front door's RTSPS port, rtsps_listen, 8322 by default)", host)
	case server != "":
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET):
		text += fmt.Sprintf(" (%s closed the connection without an RTSP answer: is it the front door's RTSP port, rtsp_listen, 8554 by default, or with rtsps:// its RTSPS port?)", host)
	case errors.As(err, &op) && op.Op == "dial":
		text = fmt.Sprintf("cannot reach the manager at %s: %v (is the manager running with its front door's RTSP at %s? rtsp_listen, 8554 by default)", host, op, host)
	}
	return &ExplainedError{text: text, err: err}
}

// refusalLine is the line of a request the RTSP server refused with
// bad's status (text: the probe's error, "DESCRIBE: bad status code: ..."
// and its hint): who refused which request, the code and reason as
// "RTSP 404 Not Found (...)", and the probe's hint after them; a DESCRIBE
// answered 404 names the title who does not have. who is the host that
// answered DESCRIBE as the line names it ("the manager at HOST"); a
// refusal of a later request is server's, the node's.
func refusalLine(text string, bad liberrors.ErrClientBadStatusCode, who, server, title string) string {
	step, hint := "the request", ""
	if i := strings.Index(text, bad.Error()); i >= 0 {
		step, hint = strings.TrimSuffix(text[:i], ": "), text[i+len(bad.Error()):]
	}
	code := fmt.Sprintf("RTSP %d %s", int(bad.Code), bad.Message)
	if server != "" && step != "DESCRIBE" {
		who = "the node at " + server // after the front door's redirect
	}
	if node, ok := strings.CutPrefix(who, "the node at "); ok {
		// The probe's hint names the node again ("the node NODE refused
		// the admission token ..."): the line has named it.
		node, _, _ = strings.Cut(node, " ")
		hint = strings.Replace(hint, ": the node "+node+" ", ": it ", 1)
	}
	if bad.Code == base.StatusNotFound && step == "DESCRIBE" && title != "" {
		return fmt.Sprintf("%s has no title %q: %s%s", who, title, code, hint)
	}
	return fmt.Sprintf("%s refused %s: %s%s", who, step, code, hint)
}

// ExplainedError is a play's error as Explain words it; errors.Is and As
// still find the probe's.
type ExplainedError struct {
	text string
	err  error
}

// Explained returns err worded as text (an ExplainedError).
func Explained(text string, err error) error { return &ExplainedError{text: text, err: err} }

// Error returns the line.
func (e *ExplainedError) Error() string { return e.text }

// Unwrap returns the probe's error.
func (e *ExplainedError) Unwrap() error { return e.err }
