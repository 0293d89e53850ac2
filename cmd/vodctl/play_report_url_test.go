package main

import (
	"bytes"
	"strings"
	"testing"
)

// The report of a play that worked showed a URL with an '@' in its query
// hidden up to that '@', which might have ended a password:
// "rtsp://demo:PW@HOST/vod/sample-001?from=a@b" played and was shown
// "rtsp://demo:xxxxx@b", the host and title the operator played gone.
// Played, the host is the one dialled: only the password is hidden now.
// A URL with a user name and no password before a bracketed IPv6 host
// ("rtsp://demo@[::1]:PORT/vod/x?a=b@c") was shown "rtsp://demo@[:xxxxx@c",
// the address cut at its first colon; it is shown whole.
func TestPlayReportShowsThePlayedURL(t *testing.T) {
	_, addr := startTSServer(t)
	_, addr6 := startTSServerAt(t, "[::1]:0")
	for raw, shown := range map[string]string{
		"rtsp://demo:s3cr3t@" + addr + "/vod/sample-001?from=a@b": "rtsp://demo:xxxxx@" + addr + "/vod/sample-001?from=a@b",
		"rtsp://demo:s3cr3t@" + addr6 + "/vod/x?a=b@c":            "rtsp://demo:xxxxx@" + addr6 + "/vod/x?a=b@c",
		"rtsp://demo@" + addr6 + "/vod/x?a=b@c":                   "rtsp://demo@" + addr6 + "/vod/x?a=b@c",
	} {
		for _, args := range [][]string{{"play", "--duration", "300ms", raw}, {"play", "--json", "--duration", "300ms", raw}} {
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			all := stdout.String() + stderr.String()
			if code != 0 || !strings.Contains(all, shown) {
				t.Errorf("%q: exit status %d\n%s\nwant 0 and %s shown", args, code, all, shown)
			}
			if strings.Contains(all, "3cr") {
				t.Errorf("%q: the password shows:\n%s", args, all)
			}
		}
	}
}
