package main

import (
	"os"
	"path/filepath"
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
	const warning = "warning: the manager takes no admin token (admin_token_file unset): the token of --token was not checked\n"
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

// The warning names where the token came from: --token-file,
// $VODCTL_TOKEN or $VODCTL_TOKEN_FILE (it named --token for all, a flag
// the operator had not given).
func TestTokenNotCheckedNamesItsSource(t *testing.T) {
	dir := t.TempDir()
	origin := startOrigin(t, dir)
	open, _ := startManager(t, dir, origin)
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("foo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args     []string
		env, val string
		from     string
	}{
		{[]string{"--token-file", file}, "", "", "--token-file"},
		{nil, "VODCTL_TOKEN", "foo", "$VODCTL_TOKEN"},
		{nil, "VODCTL_TOKEN_FILE", file, "$VODCTL_TOKEN_FILE"},
	} {
		t.Run(c.from, func(t *testing.T) {
			t.Setenv("VODCTL_TOKEN", "")
			t.Setenv("VODCTL_TOKEN_FILE", "")
			if c.env != "" {
				t.Setenv(c.env, c.val)
			}
			var out, errOut strings.Builder
			code := run(append([]string{"--manager", open.GRPCAddr(), "nodes"}, c.args...), &out, &errOut)
			want := "warning: the manager takes no admin token (admin_token_file unset): the token of " + c.from + " was not checked\n"
			if code != 0 || strings.Count(errOut.String(), want) != 1 {
				t.Errorf("vodctl nodes, token from %s: exit %d, standard error %q, want 0 and %q", c.from, code, errOut.String(), want)
			}
		})
	}
}
