package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode"
)

// FuzzPlayURLPasswordNotShown: vodctl play of a URL with a password
// ("rtsp://USER:PASSWORD@REST") never prints a part of the password,
// however the password is written (with '/', '?', '#', '@', '%' or
// spaces, not percent-encoded) and whatever follows it: its letters are
// all 'Q' and no 'Q' is anywhere else, so a 'Q' in the output is a
// password's. The forms that showed one: "u:p/x?y@127.0.0.1:85540"
// (quoted in the parse error, `invalid port ":p"`), a password ending in
// a word alone after a path that is not a title's
// ("u:p@h:8554/x?a=wd@vodfront", its host and path dialled and shown),
// and a query's '@' after a title's path, which may end the password
// (shown up to it). --transport none stops every URL vodctl takes before
// it dials; a second argument has the URL quoted by the usage error.
func FuzzPlayURLPasswordNotShown(f *testing.F) {
	for _, s := range [][3]string{
		{"u", "p/x?y", "127.0.0.1:85540"},
		{"u", "pw", "127.0.0.1:8554@x/sample-001"},
		{"u", "p", "h:8554/x?a=wd@vodfront"},
		{"u", "p@h:8554/x?a=wd", "vodfront"},
		{"u", "p@h:8554/vod/x?a=wd", "vodfront"},
		{"demo", "q@ss/x?wd", "127.0.0.1:8554"},
		{"demo", "qj##kw", "127.0.0.1:8554"},
		{"demo", "93/kw", "127.0.0.1:8554/vod/x"},
		{"u", "s3cr3t", "127.0.0.1:1/vod/x?from=a@b"},
		{"u", "p%zz", "h/vod/x"},
		{"", "p q", "[::1]:8554/s/tok/vod/x?token=t"},
		{"", "##A", "0"}, // no user, an '@' in the fragment
		{"[", "A]", "0"}, // a bracket that is no IPv6 address's
		{"h", "93/vod/x?a=b", "c"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, user, pass, rest string) {
		pass = strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) {
				return 'Q'
			}
			return r
		}, pass)
		if !strings.Contains(pass, "Q") {
			return
		}
		noQ := func(s string) string { return strings.NewReplacer("Q", "", "q", "").Replace(s) }
		// The user's name ends at the password's ':'.
		user = strings.Map(func(r rune) rune {
			if strings.ContainsRune(":@/?#Qq", r) {
				return -1
			}
			return r
		}, user)
		rest = noQ(rest)
		raw := "rtsp://" + user + ":" + pass + "@" + rest
		for _, args := range [][]string{
			{"play", "--transport", "none", raw},
			{"play", "--json", "--transport", "none", raw, "5s"},
		} {
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			all := stdout.String() + stderr.String()
			if code == 0 || strings.Contains(all, "Q") {
				t.Fatalf("play %q: exit status %d, a part of the password shows:\n%s", raw, code, all)
			}
		}
	})
}
