package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"vodcluster/cmd/internal/durflag"
	v1 "vodcluster/proto/vodcluster/v1"
)

// maxSuspension is the longest suspension the manager takes: a year of
// 366 days (SuspendRequest.duration_s at most 31622400).
const maxSuspension = 8784 * time.Hour

// maxSuspensionDays is maxSuspension as --for takes it in days.
const maxSuspensionDays = "366d"

// suspendCmd is `vodctl suspend USER --for DURATION | --lift`.
func suspendCmd(g *globals) *cobra.Command {
	var (
		dur    = durflag.Value{Limit: maxSuspensionDays + ", a year"}
		lift   bool
		reason string
	)
	cmd := &cobra.Command{
		Use:   "suspend USER",
		Short: "Refuse a subscriber's new title requests (403) for a while, or --lift it; vodctl sessions end --user ends what plays",
		Example: "  vodctl suspend alice --for 24h --reason 'account shared'\n" +
			"  vodctl sessions end --user alice --reason 'account shared'\n" +
			"  vodctl suspend alice --lift",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("name one subscriber")
			}
			if cmd.Flags().Changed("for") && dur.D == 0 {
				// It read as no --for at all.
				return fmt.Errorf("--for %s: at least 1s (--lift ends a suspension)", &dur)
			}
			if lift == (dur.D != 0) {
				return fmt.Errorf("give --for DURATION (1s to %s, a year) or --lift, one of the two", maxSuspensionDays)
			}
			// Echoed as typed: "--for 8785h0m0s" for 366d.
			if dur.D < 0 || (dur.D > 0 && dur.D < time.Second) {
				return fmt.Errorf("--for %s: at least 1s", &dur)
			}
			if dur.D > maxSuspension {
				// The manager's refusal spoke of duration_s 32400000, not --for.
				return fmt.Errorf("--for %s: at most %s, a year", &dur, maxSuspensionDays) // as --for takes it (it said 8784h)
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			return g.admin(func(ctx context.Context, c v1.AdminClient) (proto.Message, error) {
				return c.SuspendSubscriber(ctx, &v1.SuspendRequest{User: args[0], DurationS: int64(dur.D / time.Second), Reason: reason})
			}, func(m proto.Message, w *tabwriter.Writer) {
				s := m.(*v1.Suspension)
				if s.UntilUnixMs == 0 {
					fmt.Fprintf(w, "%s: suspension lifted\n", s.User)
					return
				}
				fmt.Fprintf(w, "%s: suspended until %s\n", s.User, unixMs(s.UntilUnixMs))
				if s.UserUnknown {
					fmt.Fprintf(w, "warning: the users file has no subscriber %q: the suspension is kept and applies if one of that name is added (check the name)\n", s.User)
				}
			})
		},
	}
	cmd.Flags().Var(&dur, "for", "how long (e.g. 30m, 24h, 7d; 1s to 366d, a year)")
	cmd.Flags().BoolVar(&lift, "lift", false, "lift the subscriber's suspension")
	cmd.Flags().StringVar(&reason, "reason", "", "why (logged and listed)")
	return cmd
}

// suspensionsCmd is `vodctl suspensions`.
func suspensionsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "suspensions",
		Short: "List the suspended subscribers; a name the users file does not hold is marked (not in users file)",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			return g.admin(func(ctx context.Context, c v1.AdminClient) (proto.Message, error) {
				return c.ListSuspensions(ctx, &v1.ListSuspensionsRequest{})
			}, func(m proto.Message, w *tabwriter.Writer) {
				fmt.Fprintln(w, "USER\tUNTIL\tSINCE\tREASON")
				for _, s := range m.(*v1.ListSuspensionsResponse).Suspensions {
					user := s.User
					if s.UserUnknown {
						// A misspelt name read as the subscriber meant, who
						// still plays.
						user += " (not in users file)"
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", user, unixMs(s.UntilUnixMs),
						unixMs(s.SinceUnixMs), s.Reason)
				}
			})
		},
	}
}

// unlockCmd is `vodctl unlock USER`.
func unlockCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "unlock USER",
		Short: "Forget a subscriber's failed logins (refused \"too many failed logins\"): it may log in at once",
		Long: "Forget the failed logins counted against a subscriber's user name at the manager's front door,\n" +
			"at each address (login_failures) and over all addresses (login_failures_per_user), so that a\n" +
			"subscriber refused \"too many failed logins\" may log in at once. An address's limit over all user\n" +
			"names is left: it is not the subscriber's. Ask the active manager (its front door serves the viewers).",
		Example: "  vodctl unlock alice",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("name one subscriber")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			return g.admin(func(ctx context.Context, c v1.AdminClient) (proto.Message, error) {
				return c.ClearLoginFailures(ctx, &v1.ClearLoginFailuresRequest{User: args[0]})
			}, func(m proto.Message, w *tabwriter.Writer) {
				r := m.(*v1.ClearLoginFailuresResponse)
				switch {
				case r.Addresses == 0 && !r.OverAllAddresses:
					fmt.Fprintf(w, "nothing to do: subscriber %q has no failed logins counted\n", args[0])
				case r.OverAllAddresses:
					fmt.Fprintf(w, "%s: failed logins forgotten at %d address(es) and over all addresses\n", args[0], r.Addresses)
				default:
					fmt.Fprintf(w, "%s: failed logins forgotten at %d address(es)\n", args[0], r.Addresses)
				}
				if r.UserUnknown {
					fmt.Fprintf(w, "warning: the users file has no subscriber %q (check the name)\n", args[0])
				}
			})
		},
	}
}
