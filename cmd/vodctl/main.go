// Command vodctl is the operator's CLI: it plays a title through the front
// door (the project's own probe client) and talks to the manager's Admin
// gRPC API (titles, nodes, sessions, policy, placement, prefetch, eviction,
// pins, fills).
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "vodctl:", err)
		os.Exit(1)
	}
}
