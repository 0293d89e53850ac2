package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"vodcluster/cmd/internal/durflag"
	"vodcluster/cmd/internal/probe"
	"vodcluster/proto/grpctls"
)

// printPlay writes res to w: one line for people, none when nothing
// came (no byte, no frame: the play's error says so), or with asJSON an
// indented JSON object whose keys are lowerCamelCase (videoFrames,
// mediaS), as every other command's --json (protojson), always.
func printPlay(w io.Writer, res probe.Result, asJSON bool) {
	if !asJSON {
		if res.Bytes == 0 && res.VideoFrames == 0 && res.AudioFrames == 0 {
			// Nothing came: the figures say nothing ("0.00 s of media
			// in 0.00 s", read as a stream that ended at once); the
			// play's error says what happened.
			return
		}
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
	dur := durflag.Value{D: 5 * time.Second}
	cmd := &cobra.Command{
		Use:   "play URL",
		Short: "Play a title over RTSP (following the front door's redirect) and report frames, seconds and bit/s",
		Example: "  vodctl play rtsp://demo:demo@127.0.0.1:8554/vod/sample-001 --duration 5s\n" +
			"  vodctl play --rtsps-ca ca.pem rtsps://demo:demo@vod.example.net:8322/vod/sample-001\n" +
			"  vodctl play --transport udp rtsp://demo:demo@127.0.0.1:8554/vod/sample-002\n" +
			"  vodctl play rtsp://demo:demo@127.0.0.1:8554/vod/sample-003/es   # H.264 + AAC tracks",
		Long: "Play a title over RTSP (following the front door's redirect) and report frames, seconds and bit/s.\n\n" +
			"The play lasts --duration (0: to the end of the title). Ctrl-C (SIGINT) or SIGTERM ends it\n" +
			"sooner, as its --duration would: TEARDOWN, then the report; a second one kills vodctl.\n" +
			"A play with a --duration is stopped --duration + 30s after it began: one the server has\n" +
			"not begun by then (its answer awaited) ends with an error naming the request it waited on.\n\n" +
			"Exit status: 0 for a play that received video frames; 130 (SIGINT) or 143 (SIGTERM) for one\n" +
			"a signal ended, after its TEARDOWN and report (128 + the signal's number, as a shell reports\n" +
			"a command the signal killed), and so too for one interrupted before it began; 1 for any\n" +
			"other error (a bad URL or flag, a refusal, no video frame received).",
		Args: argsBetween(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dur.D < 0 {
				// Echoed as typed: the probe's refusal was "duration -1m0s".
				return fmt.Errorf("--duration %s is negative (0 plays to the end)", &dur)
			}
			opts.Duration = dur.D
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
			// second one kills it as before. vodctl then exits 128 + the
			// signal's number (130, 143), as a shell reports a command the
			// signal killed: it exited 0 after the report, and a script could
			// not tell a play cut short from a whole one.
			parent := cmd.Context()
			if parent == nil {
				parent = context.Background()
			}
			sigCtx, caught := watchSignals(parent)
			ctx := sigCtx
			if opts.Duration > 0 {
				var cancel context.CancelFunc
				limit := playLimit{opts.Duration + playSlack} // as probe.PlayContext
				ctx, cancel = context.WithTimeoutCause(ctx, limit.d, limit)
				defer cancel()
			}
			res, err := probe.Play(ctx, args[0], opts)
			sig := caught() // the watch ends here: a signal from now on kills vodctl
			if err != nil {
				var stopped *probe.StoppedError
				var limit playLimit
				switch {
				case errors.Is(err, probe.ErrStopped) && sig != 0:
					// Before PLAY's answer (a request the server or the front
					// door's admission queue held): it waited for that answer.
					// Without the probe's "probe: " inside the line.
					return interrupted(sig, probe.Explained("interrupted before the play began, nothing played: "+strings.TrimPrefix(err.Error(), "probe: "), err))
				case errors.As(err, &stopped) && errors.As(stopped.Cause, &limit):
					// Its own limit: the line said "stopped before PLAY's
					// answer (context deadline exceeded): DESCRIBE:
					// terminated", the library's words for its own close.
					return probe.Explained(fmt.Sprintf("play stopped: %s; it was waiting for the answer to %s (nothing played)", limit, stopped.Step), err)
				}
				return probe.Explain(err, args[0], res.Server)
			}
			printPlay(cmd.OutOrStdout(), res, g.json)
			switch {
			case sig != 0 && res.VideoFrames == 0:
				return interrupted(sig, fmt.Errorf("play interrupted by %s before any video frame", sigName(sig)))
			case sig != 0:
				return interrupted(sig, fmt.Errorf("play interrupted by %s: the report is of the part played", sigName(sig)))
			case res.VideoFrames == 0:
				return noVideo(res, opts.Duration)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.Transport, "transport", "tcp", "RTP transport: tcp (interleaved) or udp")
	cmd.Flags().Var(&dur, "duration", "how long to play (0 = to the end; Ctrl-C stops it sooner, with the report)")
	cmd.Flags().StringVar(&rtspsCA, "rtsps-ca", "", "PEM CA file to verify rtsps:// servers with (the front door's and the nodes' rtsp_tls_cert_file); default: the system's roots")
	return cmd
}

// playSlack is the time vodctl play gives a play with a --duration on
// top of it (its setup, the TEARDOWN) before it stops it: as
// probe.PlayContext. A variable for tests.
var playSlack = 30 * time.Second

// playLimit is the cause of the context of a play its limit ended:
// --duration (d less playSlack) + playSlack, d in all.
type playLimit struct{ d time.Duration }

// Error returns "no end of stream within --duration + 30s (35s)".
func (l playLimit) Error() string {
	return fmt.Sprintf("no end of stream within --duration + %s (%s)", durflag.Readable(playSlack), durflag.Readable(l.d))
}

// signalCause is the cause of the context watchSignals ends: sig
// received. Its text is os/signal.NotifyContext's ("terminated signal
// received").
type signalCause struct{ sig syscall.Signal }

func (c signalCause) Error() string { return c.sig.String() + " signal received" }

// watchSignals returns a context that ends (cause signalCause) at the
// first SIGINT or SIGTERM, and caught, which ends the watch and returns
// the signal received, 0 when none was. A signal ignored when vodctl
// started (SIGINT of a job run in the background by a script) stays
// ignored: signal.Notify would catch it. After the first signal, or once
// caught has returned, the signals do again what they did before (a
// second one kills vodctl). caught must be called; it waits for the
// watch's goroutine to end.
func watchSignals(parent context.Context) (ctx context.Context, caught func() syscall.Signal) {
	ctx, cancel := context.WithCancelCause(parent)
	var sigs []os.Signal
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM} {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	if len(sigs) == 0 {
		return ctx, func() syscall.Signal { cancel(nil); return 0 }
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	var got syscall.Signal // written by the goroutine, read once it ended
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		select {
		case s := <-ch:
			signal.Stop(ch)
			got = s.(syscall.Signal)
			cancel(signalCause{got})
		case <-ctx.Done(): // caught called, or parent ended
			signal.Stop(ch)
			select {
			case s := <-ch: // came with the end: not lost
				got = s.(syscall.Signal)
			default:
			}
		}
	}()
	return ctx, func() syscall.Signal {
		cancel(nil)
		<-ended
		return got
	}
}

// interrupted is err with the exit status of a command sig ended: 128 +
// its number (130 for SIGINT, 143 for SIGTERM), the shell's convention.
func interrupted(sig syscall.Signal, err error) error {
	return &exitError{code: 128 + int(sig), err: err}
}

// sigName is SIGINT or SIGTERM, the names operators know (String says
// "interrupt", "terminated").
func sigName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// noVideo is the error of a play that received no video frame: with no
// byte at all it names the time played and what to do (it said only "no
// video frame received" after "0.00 s of media in 0.00 s", as if the
// stream had ended at once, when a node filling the title had not yet had
// the origin's first bytes: the example origin's setup_delay is 2 s).
func noVideo(res probe.Result, d time.Duration) error {
	if res.Bytes > 0 {
		return fmt.Errorf("no video frame received (%d bytes came: a title without video?)", res.Bytes)
	}
	if d == 0 {
		// --duration 0 plays to the end: "play longer with --duration"
		// was no advice for a stream that ended with nothing.
		return fmt.Errorf("no video frame received: nothing came before the stream ended (the node's log says why it ended; vodctl fills shows whether the title is still filling)")
	}
	return fmt.Errorf("no video frame received: nothing came in %s of play (a node filling the title from the origin sends its first bytes after the origin's setup delay: play longer with --duration, or again once vodctl fills shows the fill done)", durflag.Readable(d))
}
