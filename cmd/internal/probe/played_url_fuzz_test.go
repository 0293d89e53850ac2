package probe

import (
	"net/url"
	"strings"
	"testing"
	"unicode"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// FuzzPlayedURLPasswordNotShown: the URL a play that worked reports
// (playedURL, for any URL Play dials: it parses, its password does not
// spill, it names a host) shows no part of the password, percent-encoded
// or not, whatever the user name, host (IPv6, with a zone), query or '@'
// in it. FuzzPlayURLPasswordNotShown in cmd/vodctl reaches no server, so
// never this report.
func FuzzPlayedURLPasswordNotShown(f *testing.F) {
	for _, s := range [][3]string{{"demo", "pw", "[::1]:1/vod/x?a=b@c"}, {"u%41", "p%40w", "h/vod/x?from=a@b#c@d"}, {"", "p", "[fe80::1%25lo]:8554/s/tok/vod/x"}, {"d%65mo", "p%51", "h:1/vod/x?token=t&f=a@b"}} {
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
		user = strings.Map(func(r rune) rune {
			if strings.ContainsRune(":@/?#Qq", r) {
				return -1
			}
			return r
		}, user)
		rest = strings.NewReplacer("Q", "", "q", "").Replace(rest)
		raw := "rtsp://" + user + ":" + pass + "@" + rest
		bu, err := base.ParseURL(raw)
		if err != nil {
			return
		}
		u := (*url.URL)(bu)
		if passwordSpills(raw, u) || u.Hostname() == "" {
			return
		}
		if got := playedURL(raw, u); strings.ContainsAny(got, "Qq") || strings.Contains(got, "%51") || strings.Contains(got, "%71") {
			t.Fatalf("playedURL(%q) = %q", raw, got)
		}
	})
}
