// Command vodcluster runs the parts of a VOD cluster: `manager` (acm + lsm +
// smm: the front door, the scheduler and the storage manager), `node` (a VOD
// server), `cdp` (the origin), `up` (the whole cluster in one process on
// loopback with sample titles), `sim` (the scheduling and storage
// simulator), `bound` (the offline lower bound on origin bytes of a request
// trace) and `user` (add a subscriber to a users file).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "vodcluster:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	var (
		verbose   bool
		level     string
		logFormat string
	)
	root := &cobra.Command{
		Use:           "vodcluster",
		Short:         "Video-on-demand cluster manager for IPTV operators",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			h, err := logHandler(level, logFormat, verbose)
			if err != nil {
				return err
			}
			slog.SetDefault(slog.New(h))
			return nil
		},
	}
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false, "debug logging (--log-level debug)")
	root.PersistentFlags().StringVar(&level, "log-level", "info", "log level: debug, info, warn or error (warn leaves out a line per session)")
	root.PersistentFlags().StringVar(&logFormat, "log-format", "text", "log format: text (key=value) or json (one object per line)")
	root.AddCommand(managerCmd(), nodeCmd(), cdpCmd(), upCmd(), simCmd(), boundCmd(), userCmd(), subscriberTokenCmd())
	return root
}

// service is the lifecycle every server shares.
type service interface {
	Start() error
	Close() error
}

// runUntilSignal starts s, calls started (when not nil: what a SIGHUP
// does is set then, one caught while s started handled once it has), waits
// for SIGINT or SIGTERM, then closes it. SIGINT and SIGTERM are caught as
// soon as s has started, before started runs: one that came while a SIGHUP
// caught during the start was being handled killed the process (s not
// closed). While s starts they still end the process at once.
func runUntilSignal(s service, started func()) error {
	if err := s.Start(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if started != nil {
		started()
	}
	<-ctx.Done()
	slog.Info("shutting down")
	return s.Close()
}

// logHandler returns the log handler of the --log-level and --log-format
// flags, writing to standard error; verbose means debug. Errors: an
// unknown level or format.
func logHandler(level, format string, verbose bool) (slog.Handler, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	if verbose {
		lvl = slog.LevelDebug
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "text":
		return slog.NewTextHandler(os.Stderr, opts), nil
	case "json":
		return slog.NewJSONHandler(os.Stderr, opts), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}
