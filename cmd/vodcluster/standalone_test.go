package main

import (
	"strings"
	"testing"
)

// A node with no manager or origin address, and a manager with no origin,
// start (their zero sections are valid) but warn, naming the key and what
// follows from it: such a node never registered and nothing said so.
func TestStartWarnsWithoutManagerOrOrigin(t *testing.T) {
	cases := []struct {
		name string
		got  []string
		want []string // one substring per warning, in order
	}{
		{"node without both", NodeConfig{}.startWarnings(), []string{
			"no manager address (node.manager): never registered, so the front door sends it no viewers and it serves none",
			"no origin address (node.origin): it plays only the titles already in its data_dir"}},
		{"node without manager", NodeConfig{Origin: "cdp:9100"}.startWarnings(), []string{"no manager address (node.manager)"}},
		{"node without origin", NodeConfig{Manager: "mgr:9090"}.startWarnings(), []string{"no origin address (node.origin)"}},
		{"node with both", NodeConfig{Manager: "mgr:9090", Origin: "cdp:9100"}.startWarnings(), nil},
		{"manager without origin", ManagerConfig{}.startWarnings(), []string{
			"no origin address (manager.origin): the catalog is only the one in the state store, never loaded or refreshed"}},
		{"manager with origin", ManagerConfig{Origin: "cdp:9100"}.startWarnings(), nil},
	}
	for _, c := range cases {
		if len(c.got) != len(c.want) {
			t.Errorf("%s: warnings %q, want %d", c.name, c.got, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(c.got[i], w) {
				t.Errorf("%s: %q does not say %q", c.name, c.got[i], w)
			}
		}
	}
}
