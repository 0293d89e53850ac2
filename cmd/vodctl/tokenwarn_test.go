package main

import (
	"strings"
	"testing"

	"vodcluster/acm"
)

// vodctl --token against a manager that takes no admin token warns that
// the token was not checked (the manager says so in a response header):
// the call succeeded silently, and the operator could think admin
// authentication was on. Without --token, or against a manager that
// checks it, nothing is said. Against a real manager.
func TestTokenNotCheckedWarns(t *testing.T) {
	const warning = "warning: the manager takes no admin token (admin_token_file unset): --token was not checked\n"
	dir := t.TempDir()
	origin := startOrigin(t, dir)
	open, _ := startManager(t, dir, origin)
	locked, _ := startManagerWith(t, t.TempDir(), origin, func(m *acm.Manager) { m.AdminToken = "foo-token-1234" })
	for _, c := range []struct {
		m     *acm.Manager
		token string
		warns bool
	}{
		{open, "foo", true},
		{open, "", false},
		{locked, "foo-token-1234", false},
	} {
		var out, errOut strings.Builder
		code := run([]string{"--manager", c.m.GRPCAddr(), "--token", c.token, "nodes"}, &out, &errOut)
		if code != 0 || strings.Count(errOut.String(), warning) != map[bool]int{true: 1}[c.warns] {
			t.Errorf("vodctl --token %q nodes: exit %d, standard error %q, want 0 and the warning %v", c.token, code, errOut.String(), c.warns)
		}
	}
}
