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
	var verbose bool
	root := &cobra.Command{
		Use:           "vodcluster",
		Short:         "Video-on-demand cluster manager for IPTV operators",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(*cobra.Command, []string) {
			lvl := slog.LevelInfo
			if verbose {
				lvl = slog.LevelDebug
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})))
		},
	}
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false, "debug logging")
	root.AddCommand(managerCmd(), nodeCmd(), cdpCmd(), upCmd(), simCmd(), boundCmd(), userCmd())
	return root
}

// service is the lifecycle every server shares.
type service interface {
	Start() error
	Close() error
}

// runUntilSignal starts s, waits for SIGINT or SIGTERM, then closes it.
func runUntilSignal(s service) error {
	if err := s.Start(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	slog.Info("shutting down")
	return s.Close()
}
