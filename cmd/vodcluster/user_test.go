package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"vodcluster/acm"
	"vodcluster/acm/boss"
)

func runUser(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := userCmd()
	cmd.SetArgs(args)
	cmd.SetIn(strings.NewReader(stdin))
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	err := cmd.Execute()
	return out.String(), err
}

func TestUserFileAddReplaceAndAuthenticate(t *testing.T) {
	f := filepath.Join(t.TempDir(), "users.yaml")
	if _, err := runUser(t, "pw-one\n", "alice", "--file", f, "--package", "basic"); err != nil {
		t.Fatal(err)
	}
	if _, err := runUser(t, "pw-bob\n", "bob", "--file", f); err != nil {
		t.Fatal(err)
	}
	if _, err := runUser(t, "pw-two\n", "alice", "--file", f, "--package", "premium"); err != nil {
		t.Fatal(err)
	}
	users, err := boss.LoadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := users.Authenticate(ctx, boss.Credentials{User: "alice", Password: "pw-two"}); err != nil {
		t.Fatalf("replaced password refused: %v", err)
	}
	if err := users.Authenticate(ctx, boss.Credentials{User: "alice", Password: "pw-one"}); err == nil {
		t.Fatal("old password still accepted")
	}
	if ok, _ := users.Entitled(ctx, "alice", "premium"); !ok {
		t.Fatal("alice not entitled to premium")
	}
	if ok, _ := users.Entitled(ctx, "bob", "anything"); !ok {
		t.Fatal("bob (default *) not entitled")
	}
	b, _ := readFile(f)
	if strings.Contains(b, "pw-") {
		t.Fatal("users file holds a plaintext password")
	}
	if _, err := runUser(t, "", "carol", "--file", f); err == nil {
		t.Fatal("empty password accepted")
	}
	if _, err := runUser(t, "x\n", "bad:name", "--file", f); err == nil {
		t.Fatal("bad name accepted")
	}
	if _, err := runUser(t, "x\n", "dave", "--file", f, "--package", ""); err == nil || !strings.Contains(err.Error(), "empty package") {
		t.Fatalf("an empty package name: %v", err)
	}
}

// Updating a users file keeps its mode (the manager's service account
// reads it through its group); a new file is private to its owner.
func TestUserFileKeepsItsMode(t *testing.T) {
	f := filepath.Join(t.TempDir(), "users.yaml")
	if _, err := runUser(t, "pw\n", "alice", "--file", f); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("new file mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
	if err := os.Chmod(f, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := runUser(t, "pw2\n", "bob", "--file", f); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o640 {
		t.Fatalf("mode after an update %v (%v), want 0640 kept", st.Mode().Perm(), err)
	}
}

// Adding or replacing a subscriber keeps the operator's comments and the
// other entries as written: the file was rewritten from its entries alone,
// every comment dropped (the example's warning to replace the demo user
// among them).
func TestUserFileKeepsItsComments(t *testing.T) {
	f := filepath.Join(t.TempDir(), "users.yaml")
	carol, err := boss.NewUser("carol", "pw-carol", acm.DefaultRealm, []string{"basic"})
	if err != nil {
		t.Fatal(err)
	}
	body := "# Subscribers of the north region.\n" +
		"realm: vodcluster\n" +
		"users:\n" +
		"  # household 1234, contract until 2027\n" +
		"  - name: bob\n" +
		"    bcrypt: \"$2a$04$0000000000000000000000000000000000000000000000000000\"\n" +
		"    packages: [basic]   # upgraded in May\n" +
		"  # kept for the billing test\n" +
		"  - name: carol\n" +
		"    bcrypt: \"" + carol.Bcrypt + "\"\n" +
		"    ha1: " + carol.HA1 + "\n" +
		"    packages: [basic, premium]\n"
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runUser(t, "pw-alice\n", "alice", "--file", f, "--package", "basic"); err != nil {
		t.Fatal(err)
	}
	if _, err := runUser(t, "pw-bob\n", "bob", "--file", f, "--package", "premium"); err != nil {
		t.Fatal(err)
	}
	b, _ := readFile(f)
	for _, want := range []string{"# Subscribers of the north region.", "# household 1234, contract until 2027", "# kept for the billing test",
		"packages: [basic, premium]"} {
		if !strings.Contains(b, want) {
			t.Errorf("%q lost:\n%s", want, b)
		}
	}
	if strings.Index(b, "name: bob") > strings.Index(b, "name: carol") || strings.Index(b, "name: carol") > strings.Index(b, "name: alice") {
		t.Errorf("entries reordered:\n%s", b)
	}
	users, err := boss.LoadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for user, pw := range map[string]string{"alice": "pw-alice", "bob": "pw-bob", "carol": "pw-carol"} {
		if err := users.Authenticate(ctx, boss.Credentials{User: user, Password: pw}); err != nil {
			t.Errorf("%s: %v", user, err)
		}
	}
	if ok, _ := users.Entitled(ctx, "bob", "premium"); !ok {
		t.Error("bob's replaced packages not in force")
	}
	if ok, _ := users.Entitled(ctx, "bob", "basic"); ok {
		t.Error("bob keeps the packages of the replaced entry")
	}
}

// A subscriber added without --package is entitled to every title, and
// the command says so on stderr; with --package it says nothing of it.
func TestUserWithoutPackageSaysEveryTitle(t *testing.T) {
	f := filepath.Join(t.TempDir(), "users.yaml")
	for _, tc := range []struct {
		args []string
		want bool
	}{{[]string{"carol", "--file", f}, true}, {[]string{"dave", "--file", f, "--package", "basic"}, false}, {[]string{"erin"}, true}} {
		cmd := userCmd()
		cmd.SetArgs(tc.args)
		cmd.SetIn(strings.NewReader("pw\n"))
		var out, errb bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&errb)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(errb.String(), "entitled to every title (no --package: *)"); got != tc.want {
			t.Errorf("user %v: stderr %q; want the every-title note: %v", tc.args, errb.String(), tc.want)
		}
	}
}

// A subscriber replaced without --package (a password reset) keeps the
// packages of their entry, and the command says so; it gave them * (every
// title: a basic subscriber premium). --package still replaces them.
func TestUserReplacedWithoutPackageKeepsPackages(t *testing.T) {
	f := filepath.Join(t.TempDir(), "users.yaml")
	if _, err := runUser(t, "pw-one\n", "alice", "--file", f, "--package", "basic"); err != nil {
		t.Fatal(err)
	}
	cmd := userCmd()
	cmd.SetArgs([]string{"alice", "--file", f})
	cmd.SetIn(strings.NewReader("pw-two\n"))
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if want := "replaced alice in " + f + " (packages kept: [basic]; --package replaces them)\n"; errb.String() != want {
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
	users, err := boss.LoadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := users.Authenticate(ctx, boss.Credentials{User: "alice", Password: "pw-two"}); err != nil {
		t.Fatalf("new password refused: %v", err)
	}
	if ok, _ := users.Entitled(ctx, "alice", "premium"); ok {
		t.Error("a password reset entitled alice (basic) to premium")
	}
	if ok, _ := users.Entitled(ctx, "alice", "basic"); !ok {
		t.Error("alice lost basic at a password reset")
	}
	if _, err := runUser(t, "pw-three\n", "alice", "--file", f, "--package", "premium"); err != nil {
		t.Fatal(err)
	}
	if users, err = boss.LoadFile(f); err != nil {
		t.Fatal(err)
	}
	if ok, _ := users.Entitled(ctx, "alice", "basic"); ok {
		t.Error("--package premium kept basic")
	}
}
