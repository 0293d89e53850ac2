package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

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
}
