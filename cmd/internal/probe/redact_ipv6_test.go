package probe

import (
	"context"
	"testing"
)

// A user name without a password before a bracketed IPv6 host had the
// address taken for where a password begins, at its first colon:
// "rtsp://demo@[::1]:1/vod/x?a=b@c" was shown "rtsp://demo@[:xxxxx@c",
// the host cut and the rest hidden. The address stays whole: with a
// title's path the query's '@' is the query's own, shown whole as it is
// without the user name; where an '@' may still end a password (a path
// that is not a title's), it is hidden from the port's colon.
func TestRedactedKeepsABracketedHostAfterAUserName(t *testing.T) {
	for raw, shown := range map[string]string{
		"rtsp://demo@[::1]:1/vod/x?a=b@c":                   "rtsp://demo@[::1]:1/vod/x?a=b@c",
		"rtsps://ops@[fe80::1%25lo]:8322/s/tok/vod/x?f=a@b": "rtsps://ops@[fe80::1%25lo]:8322/s/xxxxx/vod/x?f=a@b",
		"rtsp://demo@[::1]:1/x?a=b@c":                       "rtsp://demo@[::1]:xxxxx@c",
		"rtsp://demo@[::1]:93/kw@h/vod/x":                   "rtsp://demo@[::1]:xxxxx@h/vod/x",
		"rtsp://demo@[::1]/vod/x?a=b@c":                     "rtsp://demo@[::1]/vod/x?a=b@c",
	} {
		if got := Redacted(raw); got != shown {
			t.Errorf("Redacted(%q) = %q, want %q", raw, got, shown)
		}
	}
	for raw, shown := range map[string]string{
		"rtsp://demo@[::1]:1/x?a=b@c":   "rtsp://demo@[::1]:xxxxx@c",
		"rtsp://demo@[::1]:1/vod/x?a@b": "rtsp://demo@[::1]:xxxxx@b",
		"rtsp://u:p@[::1]:1/x?a=b@c":    "rtsp://u:xxxxx@c",
	} {
		if got := hideAll(raw); got != shown {
			t.Errorf("hideAll(%q) = %q, want %q", raw, got, shown)
		}
	}
	raw := "rtsp://demo@[::1]:1/vod/x?a=b@c"
	if res, err := Play(context.Background(), raw, Options{}); err == nil || res.URL != raw {
		t.Errorf("%s: %v, result URL %q: want a dial error, the URL shown whole", raw, err, res.URL)
	}
}
