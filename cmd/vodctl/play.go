package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"vodcluster/cmd/internal/probe"
	"vodcluster/proto/grpctls"
)

// printPlay writes res to w: one line for people, or with asJSON an
// indented JSON object whose keys are lowerCamelCase (videoFrames,
// mediaS), as every other command's --json (protojson).
func printPlay(w io.Writer, res probe.Result, asJSON bool) {
	if !asJSON {
		fmt.Fprintln(w, res)
		return
	}
	b, _ := indentJSON(res) // numbers and strings only: it cannot fail
	fmt.Fprintln(w, string(b))
}

// playCmd is `vodctl play URL`: the probe client plays a title through
// the front door.
func playCmd(g *globals) *cobra.Command {
	var opts probe.Options
	var rtspsCA string
	cmd := &cobra.Command{
		Use:   "play URL",
		Short: "Play a title over RTSP (following the front door's redirect) and report frames, seconds and bit/s",
		Example: "  vodctl play rtsp://demo:demo@127.0.0.1:8554/vod/sample-001 --duration 5s\n" +
			"  vodctl play --rtsps-ca ca.pem rtsps://demo:demo@vod.example.net:8322/vod/sample-001\n" +
			"  vodctl play --transport udp rtsp://demo:demo@127.0.0.1:8554/vod/sample-002\n" +
			"  vodctl play rtsp://demo:demo@127.0.0.1:8554/vod/sample-003/es   # H.264 + AAC tracks",
		Args: argsBetween(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if rtspsCA != "" {
				pool, err := grpctls.CertPool(rtspsCA)
				if err != nil {
					return fmt.Errorf("--rtsps-ca: %w", err)
				}
				opts.TLSConfig = &tls.Config{RootCAs: pool}
			}
			// Ctrl-C or SIGTERM ends the play as its --duration would: TEARDOWN
			// and the report. They killed vodctl, which printed nothing and
			// left a UDP session playing on its node (holding its reservation
			// and one of the subscriber's sessions) until session_timeout. A
			// second one kills it as before.
			parent := cmd.Context()
			if parent == nil {
				parent = context.Background()
			}
			// A signal ignored when vodctl started (SIGINT of a job run in the
			// background by a script) stays ignored: Notify would catch it.
			var sigs []os.Signal
			for _, s := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
				if !signal.Ignored(s) {
					sigs = append(sigs, s)
				}
			}
			sigCtx, stop := context.WithCancel(parent)
			if len(sigs) > 0 {
				sigCtx, stop = signal.NotifyContext(parent, sigs...)
			}
			defer stop()
			go func() { <-sigCtx.Done(); stop() }() // ends with the play too (stop)
			ctx := sigCtx
			if opts.Duration > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, opts.Duration+30*time.Second) // as probe.PlayContext
				defer cancel()
			}
			res, err := probe.Play(ctx, args[0], opts)
			if err != nil {
				if errors.Is(err, probe.ErrStopped) && sigCtx.Err() != nil {
					// Before PLAY's answer (a request the server or the front
					// door's admission queue held): it waited for that answer.
					return fmt.Errorf("interrupted before the play began, nothing played: %w", err)
				}
				return explainPlay(err, args[0], res.Server != "")
			}
			printPlay(cmd.OutOrStdout(), res, g.json)
			if res.VideoFrames == 0 {
				return fmt.Errorf("no video frame received")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.Transport, "transport", "tcp", "RTP transport: tcp (interleaved) or udp")
	cmd.Flags().DurationVar(&opts.Duration, "duration", 5*time.Second, "how long to play (0 = to the end; Ctrl-C stops it sooner, with the report)")
	cmd.Flags().StringVar(&rtspsCA, "rtsps-ca", "", "PEM CA file to verify rtsps:// servers with (the front door's and the nodes' rtsp_tls_cert_file); default: the system's roots")
	return cmd
}

// explainPlay adds to a play's error what the operator can do about the
// usual mistakes of a URL's scheme and port: rtsps:// to a plain RTSP
// port (it said only "tls: first record does not look like a TLS
// handshake"), and a port that is not RTSP, such as the front door's
// HTTP one (it said only "DESCRIBE: EOF") or the manager's gRPC one
// ("connection reset by peer"). answered is whether a server answered
// DESCRIBE: a connection closed after that (a node that died or ended
// the session) is no wrong port.
func explainPlay(err error, rawURL string, answered bool) error {
	host := rawURL
	if u, perr := url.Parse(rawURL); perr == nil && u.Host != "" {
		host = u.Host
	}
	var rec tls.RecordHeaderError
	switch {
	case errors.As(err, &rec):
		return fmt.Errorf("%w (%s answers without TLS: give it an rtsp:// URL, or the front door's RTSPS port, rtsps_listen, 8322 by default)", err, host)
	case answered:
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET):
		return fmt.Errorf("%w (%s closed the connection without an RTSP answer: is it the front door's RTSP port, rtsp_listen, 8554 by default, or with rtsps:// its RTSPS port?)", err, host)
	}
	return err
}
