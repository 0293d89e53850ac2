// Command vodctl is the operator's CLI: it plays a title through the front
// door (the project's own probe client) and talks to the manager's Admin
// gRPC API (titles, nodes, sessions, policy, placement, prefetch, eviction,
// pins, fills).
//
// An error is one line on standard error, "vodctl: " and a sentence for
// the operator; for an answer of the manager (or no answer), its gRPC
// status code is last, in brackets as the docs name it
// ("... [FAILED_PRECONDITION]").
//
// Exit status: 0 on success, 1 on any error, 3 (exitNotSaved) for a
// change in use in the manager but not saved in its store (vodctl policy
// NAME, vodctl node ID with a change, vodctl node forget: a warning on
// standard error), and for vodctl play interrupted by a signal 128 + its
// number (130 for SIGINT, 143 for SIGTERM), as a shell reports a command
// a signal killed.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"google.golang.org/grpc/status"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs vodctl with args, printing to stdout and its errors to stderr
// ("vodctl: ..."), and returns its exit status: 0, the status an
// exitError carries, or 1 for any other error.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "vodctl:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

// exitError is an error with the exit status vodctl ends with (other
// errors end it with 1).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitNotSaved is vodctl's exit status for a change the manager made but
// could not save in its store (its answer carries
// vodclusterv1.ReasonNotSaved): in use there, lost at a restart or a
// takeover. A manager that predates that detail answers it UNAVAILABLE
// alone: exit status 1, as for a change refused.
const exitNotSaved = 3

// notSaved is the error of such an answer err: "warning: " and the
// manager's message, with exit status exitNotSaved.
func notSaved(err error) error {
	return &exitError{code: exitNotSaved, err: notSavedWarning{status.Convert(err)}}
}

// notSavedWarning prints the manager's answer of a change not saved as a
// warning; status.Code still reads it (UNAVAILABLE).
type notSavedWarning struct{ st *status.Status }

// Error returns "warning: " and the manager's message.
func (w notSavedWarning) Error() string { return "warning: " + w.st.Message() }

// GRPCStatus returns the manager's answer.
func (w notSavedWarning) GRPCStatus() *status.Status { return w.st }
