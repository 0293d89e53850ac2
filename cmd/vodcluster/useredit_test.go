package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"vodcluster/acm/boss"
)

// editUsers writes only the entry it adds or replaces: line endings,
// blank lines, comments (the one above a replaced entry too) and the
// other entries stay byte for byte. The file was written again from its
// YAML tree: CRLF became LF, blank lines went, and a comment above a
// replaced entry other than the first was lost.
func TestEditUsersKeepsTheFileAsWritten(t *testing.T) {
	bob := boss.User{Name: "bob", Bcrypt: "$2a$04$bobbobbobbobbobbobbobuQx8aL7C3qy2cQ7b0Ls1vJmZxGZ7zq5e", HA1: "0123456789abcdef0123456789abcdef", Packages: []string{"premium"}}
	dave := boss.User{Name: "dave", Bcrypt: "$2a$04$davedavedavedavedaveduQx8aL7C3qy2cQ7b0Ls1vJmZxGZ7zq5", HA1: "fedcba9876543210fedcba9876543210", Packages: []string{"*"}}
	const bobEntry = "  - name: bob\n" +
		"    bcrypt: $2a$04$bobbobbobbobbobbobbobuQx8aL7C3qy2cQ7b0Ls1vJmZxGZ7zq5e\n" +
		"    ha1: 0123456789abcdef0123456789abcdef\n" +
		"    packages: [premium]\n"
	const daveEntry = "  - name: dave\n" +
		"    bcrypt: $2a$04$davedavedavedavedaveduQx8aL7C3qy2cQ7b0Ls1vJmZxGZ7zq5\n" +
		"    ha1: fedcba9876543210fedcba9876543210\n" +
		"    packages: ['*']\n"
	const head = "# Subscribers of the north region.\n" +
		"\n" +
		"realm: vodcluster\n" +
		"\n" +
		"users:\n" +
		"  # household 1234\n" +
		"  - name: alice\n" +
		"    ha1: 00000000000000000000000000000000\n" +
		"    packages: [basic]   # since May\n" +
		"\n"
	const bobOld = "  # household 5678, contract until 2027\n" +
		"  - name: bob\n" +
		"    ha1: 11111111111111111111111111111111\n" +
		"    packages:\n" +
		"      - basic\n" +
		"      - sports\n"
	const bobNew = "  # household 5678, contract until 2027\n" + bobEntry
	const tail = "\n" +
		"  # kept for the billing test\n" +
		"  - name: carol\n" +
		"    ha1: 22222222222222222222222222222222\n" +
		"    packages: [basic, premium]\n" +
		"\n" +
		"# end of the list\n"
	crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
	for _, c := range []struct {
		name     string
		in, want string
		u        boss.User
	}{
		{"replace the middle entry", head + bobOld + tail, head + bobNew + tail, bob},
		{"replace the middle entry, CRLF", crlf(head + bobOld + tail), crlf(head + bobNew + tail), bob},
		{"add after the last entry", head + bobOld + tail,
			head + bobOld + strings.TrimSuffix(tail, "\n# end of the list\n") + daveEntry + "\n# end of the list\n", dave},
		{"add, CRLF", crlf(head + bobOld + tail),
			crlf(head + bobOld + strings.TrimSuffix(tail, "\n# end of the list\n") + daveEntry + "\n# end of the list\n"), dave},
		{"replace the last entry, no line ending at the end",
			head + strings.TrimSuffix(bobOld, "\n"), head + strings.TrimSuffix(bobNew, "\n"), bob},
		{"add, no line ending at the end",
			head + strings.TrimSuffix(bobOld, "\n"), head + bobOld + strings.TrimSuffix(daveEntry, "\n"), dave},
		{"entries at the key's indentation",
			"realm: vodcluster\nusers:\n- name: bob\n  ha1: 11111111111111111111111111111111\n  packages: [basic]\n\n- name: carol\n  ha1: 22222222222222222222222222222222\n  packages: [basic]\n",
			"realm: vodcluster\nusers:\n" + strings.ReplaceAll(bobEntry, "\n  ", "\n")[2:] + "\n- name: carol\n  ha1: 22222222222222222222222222222222\n  packages: [basic]\n", bob},
		{"a long quoted value on two lines",
			"realm: vodcluster\nusers:\n  - name: bob\n    bcrypt: \"$2a$04$bobbobbobbobbobbobbobuQx8aL7C3qy2cQ7b0L\n      s1vJmZxGZ7zq5e\"\n    packages: [basic]\n  # next\n  - name: carol\n    ha1: 22222222222222222222222222222222\n    packages: [basic]\n",
			"realm: vodcluster\nusers:\n" + bobEntry + "  # next\n  - name: carol\n    ha1: 22222222222222222222222222222222\n    packages: [basic]\n", bob},
		{"an empty flow list, CRLF: written again, CRLF kept",
			crlf("# the list\nrealm: vodcluster\nusers: []\n"), crlf("# the list\n\nrealm: vodcluster\nusers:\n  - name: dave\n    bcrypt: $2a$04$davedavedavedavedaveduQx8aL7C3qy2cQ7b0Ls1vJmZxGZ7zq5\n    ha1: fedcba9876543210fedcba9876543210\n    packages:\n      - '*'\n"), dave},
		{"no list", "realm: vodcluster\n", "realm: vodcluster\nusers:\n  - name: dave\n    bcrypt: $2a$04$davedavedavedavedaveduQx8aL7C3qy2cQ7b0Ls1vJmZxGZ7zq5\n    ha1: fedcba9876543210fedcba9876543210\n    packages:\n      - '*'\n", dave},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := editUsers([]byte(c.in), c.u)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got:\n%q\nwant:\n%q", got, c.want)
			}
			f := filepath.Join(t.TempDir(), "users.yaml")
			if err := os.WriteFile(f, got, 0o600); err != nil {
				t.Fatal(err)
			}
			var doc usersDoc
			if err := readUsers(f, &doc); err != nil {
				t.Fatalf("the result does not read: %v", err)
			}
		})
	}
}

// The command edits a CRLF users file in place: what is before and after
// the replaced entry is as it was, and every line still ends in CRLF.
func TestUserCommandKeepsACRLFFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "users.yaml")
	carol, err := boss.NewUser("carol", "pw-carol", "vodcluster", []string{"basic"})
	if err != nil {
		t.Fatal(err)
	}
	before := "# north region\r\n\r\nrealm: vodcluster\r\nusers:\r\n  # household 5678\r\n"
	after := "\r\n  # billing test\r\n  - name: carol\r\n    ha1: " + carol.HA1 + "\r\n    packages: [basic]\r\n"
	if err := os.WriteFile(f, []byte(before+"  - name: bob\r\n    ha1: 11111111111111111111111111111111\r\n    packages: [basic]\r\n"+after), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runUser(t, "pw-bob\n", "bob", "--file", f, "--package", "premium"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f)
	s := string(b)
	if !strings.HasPrefix(s, before+"  - name: bob\r\n") || !strings.HasSuffix(s, after) || strings.Count(s, "\n") != strings.Count(s, "\r\n") {
		t.Fatalf("the file around the entry changed:\n%q", s)
	}
	users, err := boss.LoadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := users.Authenticate(t.Context(), boss.Credentials{User: "bob", Password: "pw-bob"}); err != nil {
		t.Fatal(err)
	}
}
