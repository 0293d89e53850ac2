package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"vodcluster/cmd/internal/probe"
)

// noArgs refuses arguments to a command that takes none, saying so with
// its usage (and its subcommands, when it has some). cobra.NoArgs said
// `unknown command "sample-001" for "vodctl titles"`, which reads as a
// mistyped subcommand of a command that has none.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("%s takes no arguments, got %s (usage: %s", subPath(cmd), quoteArgs(args), cmd.UseLine())
	var subs []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			subs = append(subs, c.Name())
		}
	}
	if len(subs) > 0 {
		msg += "; subcommands: " + strings.Join(subs, ", ")
	}
	return fmt.Errorf("%s)", msg)
}

// argsBetween accepts min to max arguments; past either, it says how many
// the command wants with its usage line (cobra's "accepts 1 arg(s),
// received 0" named neither the command nor the arguments).
func argsBetween(min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= min && len(args) <= max {
			return nil
		}
		want := fmt.Sprintf("%d or %d arguments", min, max)
		switch {
		case min == max && min == 1:
			want = "1 argument"
		case min == max:
			want = fmt.Sprintf("%d arguments", min)
		case max == min+1 && max == 1:
			want = "at most 1 argument"
		case max > min+1:
			want = fmt.Sprintf("%d to %d arguments", min, max)
		}
		got := "none"
		if len(args) > 0 {
			got = fmt.Sprintf("%d (%s)", len(args), quoteArgs(args))
		}
		return fmt.Errorf("%s takes %s, got %s (usage: %s)", subPath(cmd), want, got, cmd.UseLine())
	}
}

// quoteArgs lists args quoted, separated by spaces, a URL's password and
// tokens (?token=, a node URL's /s/TOKEN/) replaced by xxxxx
// (probe.Redacted), as vodctl play's report hides them: the refusal of
// `vodctl play URL 5s` is pasted into tickets too.
func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", probe.Redacted(a))
	}
	return strings.Join(q, " ")
}

// subPath is cmd's path below the root ("node forget"): main prefixes
// errors with "vodctl: ".
func subPath(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}
