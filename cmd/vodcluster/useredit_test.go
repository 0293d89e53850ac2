package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

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

// An entry that defines an anchor another entry's alias names can be
// replaced: the alias becomes a copy of what it named, and the other
// entry keeps its packages. The file written named an anchor no longer
// there, and the command failed with "unknown anchor 'std' referenced",
// so that subscriber could not be replaced at all.
func TestEditUsersReplacesAnEntryOthersAliasTo(t *testing.T) {
	alice, err := boss.NewUserCost("alice", "pw-alice", "vodcluster", []string{"premium"}, bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	const ha1 = "11111111111111111111111111111111"
	for name, in := range map[string]string{
		"a sequence": "realm: vodcluster\nusers:\n  - name: alice\n    ha1: " + ha1 + "\n    packages: &std [basic, sports]\n" +
			"  - name: bob\n    ha1: " + ha1 + "\n    packages: *std\n",
		"a merged entry": "realm: vodcluster\nusers:\n  - &base\n    name: alice\n    ha1: " + ha1 + "\n    packages: [basic, sports]\n" +
			"  - <<: *base\n    name: bob\n",
	} {
		t.Run(name, func(t *testing.T) {
			out, err := editUsers([]byte(in), alice)
			if err != nil {
				t.Fatal(err)
			}
			f, err := boss.ParseFile(bytes.NewReader(out))
			if err != nil {
				t.Fatalf("the result does not read: %v\n%s", err, out)
			}
			for user, pkg := range map[string]string{"alice": "premium", "bob": "sports"} {
				if ok, err := f.Entitled(t.Context(), user, pkg); !ok || err != nil {
					t.Errorf("%s not entitled to %s (%v) in\n%s", user, pkg, err, out)
				}
			}
			if ok, _ := f.Entitled(t.Context(), "alice", "sports"); ok {
				t.Errorf("alice kept her old packages:\n%s", out)
			}
		})
	}
}

// The comment on a replaced entry's name line is about the subscriber
// and stays on it, in the text edit and in the rewrite from the YAML tree
// alike; it went with the entry.
func TestEditUsersKeepsTheNameLineComment(t *testing.T) {
	bob, err := boss.NewUserCost("bob", "pw-bob", "vodcluster", []string{"premium"}, bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{
		"realm: vodcluster\nusers:\n  - name: bob   # household 5678\n    ha1: 11111111111111111111111111111111\n    packages: [basic] # since May\n",
		"realm: vodcluster\nusers: [{name: bob, ha1: 11111111111111111111111111111111, packages: [basic]}]\n", // no comment: none added
		"realm: vodcluster\nusers:\n  - &b\n    name: bob # household 5678\n    ha1: 11111111111111111111111111111111\n    packages: [basic]\n  - <<: *b\n    name: carol\n",
	} {
		out, err := editUsers([]byte(in), bob)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Contains(in, "household")
		if got := strings.Contains(string(out), "name: bob # household 5678\n"); got != want {
			t.Errorf("from\n%s\nthe name line's comment kept: %v, want %v:\n%s", in, got, want, out)
		}
		if strings.Contains(string(out), "since May") {
			t.Errorf("the comment on a replaced value kept:\n%s", out)
		}
		if _, err := boss.ParseFile(bytes.NewReader(out)); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
}

// --file through a symbolic link edits the file the link points to and
// leaves the link a link: the rename replaced the link with a plain file
// and the file it pointed to (in a configuration checkout, say) kept the
// old list. Edits through the link and through the file's own name take
// the same lock.
func TestUserFileThroughASymlink(t *testing.T) {
	d := t.TempDir()
	if err := os.Mkdir(filepath.Join(d, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(d, "conf", "users.yaml")
	if _, err := runUser(t, "pw-bob\n", "bob", "--file", target); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(target, 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(d, "users.yaml")
	if err := os.Symlink("conf/users.yaml", link); err != nil {
		t.Fatal(err)
	}
	chain := filepath.Join(d, "current.yaml") // a link to the link
	if err := os.Symlink(link, chain); err != nil {
		t.Fatal(err)
	}
	if _, err := runUser(t, "pw-alice\n", "alice", "--file", link); err != nil {
		t.Fatal(err)
	}
	if _, err := runUser(t, "pw-carol\n", "carol", "--file", chain); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{link, chain} {
		if fi, err := os.Lstat(l); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Fatalf("%s is no longer a link: %v %v", l, fi.Mode(), err)
		}
	}
	if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("the file's mode: %v %v, want 0640", fi.Mode(), err)
	}
	users, err := boss.LoadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob", "carol"} {
		if err := users.Authenticate(t.Context(), boss.Credentials{User: u, Password: "pw-" + u}); err != nil {
			t.Errorf("%s in the file the link points to: %v", u, err)
		}
	}
	if got, err := followLinks(chain); err != nil || got != target {
		t.Fatalf("followLinks(%s): %q %v, want %q", chain, got, err, target)
	}
	// A link to a file not there yet: the file is made where it points.
	dangling := filepath.Join(d, "new.yaml")
	if err := os.Symlink("conf/new.yaml", dangling); err != nil {
		t.Fatal(err)
	}
	if _, err := runUser(t, "pw-dave\n", "dave", "--file", dangling); err != nil {
		t.Fatal(err)
	}
	if _, err := boss.LoadFile(filepath.Join(d, "conf", "new.yaml")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(dangling); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("%s is no longer a link", dangling)
	}
}

// A users file made beforehand with its owner and mode (touch, chown,
// chmod 0640), empty or with comments only, takes its first subscriber:
// the command failed with "empty users file". Its comments and mode stay.
func TestUserFileMadeBeforehand(t *testing.T) {
	for name, before := range map[string]string{
		"empty":         "",
		"comments only": "# Subscribers of the north region.\r\n# One entry per household.",
	} {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "users.yaml")
			if err := os.WriteFile(f, []byte(before), 0o640); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(f, 0o640); err != nil {
				t.Fatal(err)
			}
			if _, err := runUser(t, "pw-alice\n", "alice", "--file", f, "--package", "basic"); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(b), before) {
				t.Fatalf("the comments went:\n%s", b)
			}
			if before != "" && strings.Count(string(b), "\n") != strings.Count(string(b), "\r\n") {
				t.Fatalf("the file's CRLF line endings not followed:\n%q", b)
			}
			if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o640 {
				t.Fatalf("mode %v %v, want 0640", fi.Mode(), err)
			}
			users, err := boss.LoadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := users.Authenticate(t.Context(), boss.Credentials{User: "alice", Password: "pw-alice"}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
