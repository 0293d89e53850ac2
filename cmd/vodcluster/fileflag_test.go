package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every flag of vodcluster that takes a file names itself in that file's
// errors, with the file: they said "open FILE: no such file or
// directory", the flag left to guess (subscriber-token --secret-file or
// --key-file? the config of which part?).
func TestFileErrorsNameTheFlag(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	notYAML := filepath.Join(dir, "not-yaml")
	if err := os.WriteFile(notYAML, []byte("just words\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"subscriber-token", "--user", "a", "--secret-file", missing}, "--secret-file " + missing + ": open: no such file"},
		{[]string{"subscriber-token", "--user", "a", "--secret-file", dir}, "--secret-file " + dir + ": read: is a directory"},
		{[]string{"subscriber-token", "--user", "a", "--key-file", missing}, "--key-file " + missing + ": open: no such file"},
		{[]string{"subscriber-token", "--user", "a", "--key-file", notYAML}, "--key-file " + notYAML + ": no PEM private key"},
		{[]string{"manager", "--config", missing}, "--config " + missing + ": open: no such file"},
		{[]string{"node", "-c", missing}, "--config " + missing + ": open: no such file"},
		{[]string{"cdp", "-c", dir}, "--config " + dir + ": read: is a directory"},
		{[]string{"cdp", "-c", notYAML}, "--config " + notYAML + ": line 1"},
		{[]string{"user", "bob", "--file", dir}, "--file " + dir + ": read: is a directory"},
		{[]string{"user", "bob", "--file", notYAML}, "--file " + notYAML + ": "},
		{[]string{"user", "bob", "--file", filepath.Join(missing, "users.yaml")}, "--file " + filepath.Join(missing, "users.yaml") + ": "},
		{[]string{"sim", "--config", missing}, "sim: --config " + missing + ": open: no such file"},
		{[]string{"sim", "--config", notYAML}, "sim: --config " + notYAML + ": "},
		{[]string{"sim", "--plot", filepath.Join(missing, "x.svg")}, "sim: --plot " + filepath.Join(missing, "x.svg") + ": open: no such file"},
		{[]string{"sim", "--trace-out", filepath.Join(missing, "x.csv")}, "sim: --trace-out " + filepath.Join(missing, "x.csv") + ": open: no such file"},
		{[]string{"bound", "--capacity", "1000", "--trace", missing}, "bound: --trace " + missing + ": cannot open it: no such file"},
		{[]string{"bound", "--capacity", "1000", missing}, "bound: trace file " + missing + ": cannot open it: no such file"},
		{[]string{"bound", "--capacity", "1000", "--trace", notYAML}, "--trace " + notYAML + ": "},
	} {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetIn(strings.NewReader("s3cret\n"))
		root.SetArgs(c.args)
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("vodcluster %s: %v, want %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}
