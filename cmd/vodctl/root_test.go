package main

import (
	"bytes"
	"strings"
	"testing"
)

// evict without a node is refused with a message that says what to give,
// before any call to the manager (none listens on the address).
func TestEvictNeedsNode(t *testing.T) {
	cmd := newRoot()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--manager", "127.0.0.1:1", "evict", "sample-013"})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "name the NODE") {
		t.Fatalf("evict without NODE: %v", err)
	}
}
