// Command vodctl is the operator's CLI: it plays a title through the front
// door (the project's own probe client) and talks to the manager's Admin
// gRPC API (titles, nodes, sessions, policy, placement, prefetch, eviction,
// pins, fills).
//
// Exit status: 0 on success, 1 on any error, and for vodctl play
// interrupted by a signal 128 + its number (130 for SIGINT, 143 for
// SIGTERM), as a shell reports a command a signal killed.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
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
